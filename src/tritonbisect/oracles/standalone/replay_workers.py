# ruff: noqa: UP031, UP041, B905, E402  (imports after sys.path; runs on the target's Python, which may be older than the tool's)
"""The whole-program replay's workers, beside replay.py: each recorded launch compiled or run
in a worker forked from a fork server made before the device was touched (a crash is that
launch's), in a fresh interpreter per launch (spawn), or in the replay's own process (none);
the messages between them, and the kernels and arguments a worker rebuilds."""

import json
import os
import pickle
import signal
import socket
import struct
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle_args import (
    compile_options,
    install_allocator,
    make_descriptor,
    torch_dtype,
)
from oracle_core import (
    PAD,
    Outcome,
    error_kind,
    load_failure,
    short_error,
    synchronize,
)

# --- framing over a socket (the fork server and its workers) ------------------------------


def send_msg(sock, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 22))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_msg(sock):
    head = _recv_exact(sock, 8)
    if head is None:
        return None
    body = _recv_exact(sock, struct.unpack("!Q", head)[0])
    return None if body is None else pickle.loads(body)


# --- kernels, arguments ---------------------------------------------------------------------


class Kernels:
    """Each kernel's embedded source, executed as its own module on first use."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.loaded = {}

    def get(self, key):
        if key not in self.loaded:
            import linecache
            import types

            info = self.ctx["kernels"][key]
            filename = os.path.join(HERE, "replay.py[%s]" % key)
            source = info["source"]
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            module = types.ModuleType("tritonbisect_replay_%d" % len(self.loaded))
            module.__file__ = filename
            sys.modules[module.__name__] = module
            exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
            kernel = getattr(module, info["name"], None)
            if kernel is None:
                raise NameError("the embedded source defines no '%s'" % info["name"])
            self.loaded[key] = kernel
        return self.loaded[key]


def tensor_view(torch, buffers, spec):
    dtype = torch_dtype(torch, spec["dtype"])
    itemsize = torch.empty(0, dtype=dtype).element_size()
    typed = buffers[spec["buffer"]].view(dtype)
    return torch.as_strided(typed, spec["shape"], spec["stride"], (PAD + spec["byte_offset"]) // itemsize)


def launch_values(torch, buffers, launch):
    values = {}
    for spec in launch["args"]:
        kind = spec["kind"]
        if kind == "tensor":
            values[spec["name"]] = tensor_view(torch, buffers, spec)
        elif kind == "scalar":
            values[spec["name"]] = float(spec["value"]) if spec.get("type") == "float" else spec["value"]
        elif kind == "none":
            values[spec["name"]] = None
        elif kind == "dtype":
            text = spec["value"]
            if text.startswith("torch."):
                values[spec["name"]] = torch_dtype(torch, text)
            else:
                import triton.language as tl

                values[spec["name"]] = tl.dtype(text)
        elif kind == "descriptor":
            values[spec["name"]] = make_descriptor(values[spec["base"]], spec)
        elif kind == "tuple":
            values[spec["name"]] = tuple(values[part] for part in spec["elements"])
        else:
            raise Outcome("usage_error", "argument %s has kind %s, which this oracle cannot rebuild" % (spec["name"], kind))
    # the parts of descriptors and tuples are tensors of their own here, not kernel arguments
    return dict((spec["name"], values[spec["name"]]) for spec in launch["args"] if not spec.get("part_of"))


def options_of(triton, launch):
    return compile_options(triton, {"compile": launch["compile"]})


def execute(torch, triton, kernels, launch, buffers, device, interpret, compile_only):
    """Compile (compile_only, on a GPU) or launch one recorded launch. Returns None, or
    (status, reason) for an error that Python saw."""
    try:
        kernel = kernels.get(launch["kernel"])
    except Exception as exc:
        traceback.print_exc()
        return load_failure(exc)
    values = launch_values(torch, buffers, launch)
    install_allocator(torch, triton, device, kernels.ctx["kernels"][launch["kernel"]]["source"])
    grid = tuple(launch["grid"])
    options = options_of(triton, launch)
    try:
        if compile_only:
            kernel.warmup(grid=grid, **values, **options)
        else:
            kernel[grid](**values, **options)
            synchronize(torch, device)
    except Exception as exc:
        traceback.print_exc()
        kind = "compile_error" if compile_only else error_kind(exc)
        what = "the kernel does not compile" if kind == "compile_error" else "the launch failed"
        return kind, "%s: %s" % (what, short_error(exc))
    return None


# --- workers --------------------------------------------------------------------------------


class SockChan:
    def __init__(self, sock):
        self.sock = sock

    def send(self, obj):
        send_msg(self.sock, obj)

    def recv(self):
        return recv_msg(self.sock)


class ConnChan:
    def __init__(self, conn):
        self.conn = conn

    def send(self, obj):
        self.conn.send(obj)

    def recv(self):
        try:
            return self.conn.recv()
        except EOFError:
            return None


def worker_loop(chan, ctx, device, interpret):
    """Serve requests until the parent hangs up: ("run", order, {buffer: uint8 tensor}) under
    the interpreter (the buffers come back), ("compile", order) on a device."""
    import torch
    import triton

    kernels = Kernels(ctx)
    while True:
        req = chan.recv()
        if req is None:
            return
        op, order = req[0], req[1]
        launch = ctx["launches"][order]
        if op == "run":
            buffers = req[2]
            error = execute(torch, triton, kernels, launch, buffers, device, interpret, False)
            chan.send(("ok", buffers) if error is None else ("error",) + error)
        else:
            buffers = {}
            for spec in launch["args"]:
                if spec["kind"] == "tensor" and spec["buffer"] not in buffers:
                    nbytes = ctx["buffers"][spec["buffer"]]["nbytes"] + 2 * PAD
                    buffers[spec["buffer"]] = torch.zeros(nbytes, dtype=torch.uint8, device=device)
            error = execute(torch, triton, kernels, launch, buffers, device, interpret, True)
            chan.send(("ok", None) if error is None else ("error",) + error)
        sys.stdout.flush()
        sys.stderr.flush()


def fork_server(ctl, ctx, device, interpret):
    """Fork a worker per request (its socket arrives over `ctl`), report its end."""
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(ctl, 16, 1)
        except OSError:
            os._exit(0)
        if not msg or not fds:
            os._exit(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            ctl.close()
            sock = socket.socket(fileno=fds[0])
            code = 0
            try:
                worker_loop(SockChan(sock), ctx, device, interpret)
            except BaseException:
                traceback.print_exc()
                code = 70
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        os.close(fds[0])
        send_msg(ctl, ("pid", pid))
        _, status = os.waitpid(pid, 0)
        send_msg(ctl, ("exit", pid, status))


def describe_status(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return "killed by %s" % name
    return "exited %d without a result" % os.WEXITSTATUS(status)


class ForkIsolation:
    """A fork server forked before the device is touched; long-lived workers forked from it."""

    name = "fork"

    def __init__(self, ctx, device, interpret):
        self.ctl, child = socket.socketpair()
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():  # torch's idle threads: the server itself only forks and waits
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            self.ctl.close()
            fork_server(child, ctx, device, interpret)
            os._exit(0)
        child.close()
        self.server = pid
        self.sock = None
        self.pid = None
        self.forks = 0

    def _spawn(self):
        mine, theirs = socket.socketpair()
        socket.send_fds(self.ctl, [b"w"], [theirs.fileno()])
        theirs.close()
        reply = recv_msg(self.ctl)
        self.sock, self.pid = mine, reply[1]
        self.forks += 1

    def request(self, req, timeout):
        if self.sock is None:
            self._spawn()
        assert self.sock is not None and self.pid is not None  # _spawn sets both
        self.sock.settimeout(timeout)
        try:
            send_msg(self.sock, req)
            reply = recv_msg(self.sock)
        except (socket.timeout, TimeoutError):
            os.kill(self.pid, signal.SIGKILL)
            self._lost()
            return ("timeout", "no answer from the worker after %gs: the kernel hangs or is far too slow" % timeout)
        except OSError:
            reply = None
        if reply is None:
            return ("crash", "the worker %s" % self._lost())
        return reply

    def _lost(self):
        assert self.sock is not None  # called on a worker that was spawned
        self.sock.close()
        self.sock = None
        msg = recv_msg(self.ctl)
        return describe_status(msg[2]) if msg and msg[0] == "exit" else "died"

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            recv_msg(self.ctl)
        self.ctl.close()
        try:
            os.waitpid(self.server, 0)
        except OSError:  # noqa: SIM105
            return


def spawn_entry(conn, context_path, device, interpret):
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    with open(context_path, encoding="utf-8") as fh:
        ctx = json.load(fh)
    worker_loop(ConnChan(conn), ctx, device, interpret)


class SpawnIsolation:
    """A fresh interpreter per launch (multiprocessing's spawn): to compare with fork."""

    name = "spawn"

    def __init__(self, context_path, device, interpret):
        import multiprocessing

        self.mp = multiprocessing.get_context("spawn")
        self.args = (context_path, device, interpret)
        self.forks = 0

    def request(self, req, timeout):
        mine, theirs = self.mp.Pipe()
        proc = self.mp.Process(target=spawn_entry, args=(theirs,) + self.args)
        proc.start()
        theirs.close()
        self.forks += 1
        reply = None
        try:
            mine.send(req)
            if mine.poll(timeout):
                reply = mine.recv()
            else:
                proc.kill()
                reply = ("timeout", "no answer from the worker after %gs" % timeout)
        except (EOFError, OSError):
            reply = None
        mine.close()
        proc.join()
        if reply is None:
            code = proc.exitcode
            what = "killed by %s" % signal.Signals(-code).name if code and code < 0 else "exited %s without a result" % code
            return ("crash", "the worker %s" % what)
        return reply

    def close(self):
        pass


class NoIsolation:
    name = "none"

    def __init__(self, ctx, device, interpret):
        self.ctx, self.device, self.interpret = ctx, device, interpret
        self.kernels = None
        self.forks = 0

    def request(self, req, timeout):
        import torch
        import triton

        if self.kernels is None:
            self.kernels = Kernels(self.ctx)
        launch = self.ctx["launches"][req[1]]
        if req[0] == "run":
            error = execute(torch, triton, self.kernels, launch, req[2], self.device, self.interpret, False)
            return ("ok", req[2]) if error is None else ("error",) + error
        return ("ok", None)

    def close(self):
        pass
