; RUN: llc -mtriple=x86_64 < %s | FileCheck %s
define i64 @f@N@(i64 %x) {
  %r = add i64 %x, @N@
  ret i64 %r
}
; CHECK: addq $@N@
