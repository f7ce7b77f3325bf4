# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Bridge between one version-neutral compile job and the compiler API of the Triton at hand.

Runs inside the target environment (standard library + the triton under test). Copied
verbatim into every compile-oracle folder, so it imports nothing of tritonbisect.

A job's parameters are described once, independent of Triton's version:

    {"name": "x_ptr", "kind": "pointer", "type": "*fp32", "divisible_16": true}
    {"name": "n", "kind": "int", "type": "i32", "divisible_16": false, "equal_to_1": false}
    {"name": "scale", "kind": "float", "type": "fp32"}
    {"name": "BLOCK", "kind": "constexpr", "value": 1024}     # {"dtype": "fp16"} for a dtype
    {"name": "bias", "kind": "none"}                           # a None argument
    {"name": "a_desc", "kind": "tensordesc", "type": "tensordesc<fp16[64, 64]>"}
    {"name": "ptrs", "kind": "tuple", "items": [<params>]}

and turned here into what `ASTSource` of this Triton wants. The differences bridged
(read and run on the PyPI releases 3.0.0-3.9.0; see docs/compile-oracle.md):

    Triton      ASTSource(...)                    signature keys / constexpr params         specialization
    3.0, 3.1    (fn, signature, constants, attrs) names; constexprs left out of the          AttrsDescriptor(divisible_by_16=,
                                                  signature, given in `constants` by name    equal_to_1=) from triton.compiler
    3.2         (fn, signature, constants, attrs) as 3.0                                     backend AttrsDescriptor subclass,
                                                                                             .from_hints({index: 16 | 1})
    3.3 - 3.9   (fn, signature, constexprs, attrs) names; constexprs (and ints equal to 1,  {(index,): [["tt.divisibility", 16]]}
                                                  None) typed "constexpr", values keyed by  (tuple paths for tuple arguments)
                                                  (index,) paths
    all         GPUTarget from triton.backends.compiler; compile options filtered by the backend's option fields

The flavour is told by the API itself (the parameters of ASTSource.__init__, the presence of
AttrsDescriptor), never by the version string: a bisect step's Triton is often a dev build.
"""

import importlib.util
import inspect
import os
import sys


class BridgeError(Exception):
    """This Triton cannot be driven the way the job asks (our harness, not the compiler)."""


class Unsupported(BridgeError):
    """A Triton this old has no way to express the kernel's arguments (tuples, tensor
    descriptors): the commit cannot run this test at all, as when it does not build."""


FLAVOR_CONSTEXPRS = "constexprs"  # 3.3+: ASTSource(fn, signature, constexprs, attrs dict)
FLAVOR_HINTS = "attrs-hints"  # 3.2: constants + backend AttrsDescriptor.from_hints
FLAVOR_SETS = "attrs-sets"  # 3.0/3.1: constants + AttrsDescriptor(divisible_by_16, equal_to_1)


# --- the kernel -------------------------------------------------------------------------

# Where a name Inductor kernels import may live, newest layout first (the source extraction
# turns those imports into `_tritonbisect_import(module, name)` calls).
HELPER_FALLBACKS = {
    "libdevice": ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice", "triton.language.math"),
    "math": ("triton.language.math",),
}


class HelperMissing(Unsupported):
    """A runtime helper the kernel imports is nowhere in this torch/triton."""


def _module_candidates(module):
    out = [module]
    if module.startswith("torch._inductor.runtime"):
        out.append("torch._inductor" + module[len("torch._inductor.runtime"):])
    elif module.startswith("torch._inductor"):
        out.append("torch._inductor.runtime" + module[len("torch._inductor"):])
    return out


def tritonbisect_import(module, name):
    """`from module import name` (`import module` when name is None), wherever this
    torch/triton keeps it; HelperMissing when nowhere."""
    tried = []
    for path in _module_candidates(module):
        try:
            mod = importlib.import_module(path)
        except Exception as exc:  # noqa: BLE001 - a helper module may fail with this Triton
            tried.append("%s (%s)" % (path, str(exc)[:120]))
            continue
        if name is None:
            return mod
        if hasattr(mod, name):
            return getattr(mod, name)
        try:
            return importlib.import_module(path + "." + name)
        except Exception:  # noqa: BLE001
            tried.append("%s.%s" % (path, name))
    for path in HELPER_FALLBACKS.get(name, ()):
        try:
            return importlib.import_module(path)
        except Exception:  # noqa: BLE001
            tried.append(path)
    what = module if name is None else "%s from %s" % (name, module)
    raise HelperMissing("the kernel imports %s, which this torch/triton does not provide (tried %s)"
                        % (what, "; ".join(tried)))


def load_kernel(path, name):
    """The JITFunction `name` of the kernel source file `path` (autotune wrappers unwrapped)."""
    module_name = "tb_compile_kernel_%s" % abs(hash(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    module.__dict__["_tritonbisect_import"] = tritonbisect_import
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise NameError("the kernel source %s defines no '%s'" % (path, name))
    seen = 0
    while not hasattr(fn, "arg_names") and hasattr(fn, "fn") and seen < 8:
        fn = fn.fn  # Autotuner / Heuristics wrap the JITFunction
        seen += 1
    if not hasattr(fn, "arg_names"):
        raise BridgeError("'%s' is not a @triton.jit function (%s)" % (name, type(fn).__name__))
    return fn


# --- API flavour ------------------------------------------------------------------------


def api_flavor(triton):
    from triton.compiler import ASTSource

    params = inspect.signature(ASTSource.__init__).parameters
    if "constexprs" in params:
        return FLAVOR_CONSTEXPRS
    if "constants" not in params:
        raise BridgeError("this Triton's ASTSource takes %s: not an API the compile oracle knows" % list(params))
    try:
        from triton.backends.compiler import AttrsDescriptor

        if hasattr(AttrsDescriptor, "from_hints"):
            return FLAVOR_HINTS
    except ImportError:
        pass
    try:
        from triton.compiler.compiler import AttrsDescriptor  # noqa: F401

        return FLAVOR_SETS
    except ImportError:
        pass
    raise BridgeError("this Triton has ASTSource(constants=...) but no AttrsDescriptor the oracle knows "
                      "(Triton before 3.0 is not supported)")


def gpu_target(target):
    """GPUTarget(backend, arch, warp_size) of this Triton."""
    cls = None
    for module_name in ("triton.backends.compiler", "triton.compiler"):
        try:
            module = __import__(module_name, fromlist=["GPUTarget"])
        except ImportError:
            continue
        cls = getattr(module, "GPUTarget", None)
        if cls is not None:
            break
    if cls is None:
        raise BridgeError("this Triton has no GPUTarget (Triton before 3.0 is not supported)")
    arch = target["arch"]
    if isinstance(arch, str) and arch.isdigit():
        arch = int(arch)
    return cls(target["backend"], arch, int(target["warp_size"]))


def make_backend(target):
    try:
        from triton.compiler.compiler import make_backend as make
    except ImportError:
        raise BridgeError("this Triton has no triton.compiler.compiler.make_backend") from None
    return make(target)


def option_fields(backend):
    """Names of the compile options this Triton's backend knows."""
    opts = backend.parse_options({})
    fields = getattr(opts, "__dataclass_fields__", None)
    return set(fields) if fields else set(vars(opts))


def filter_options(backend, options):
    """(options this Triton knows, names it does not)."""
    known = option_fields(backend)
    kept = {k: v for k, v in options.items() if k in known and v is not None}
    dropped = sorted(k for k, v in options.items() if k not in known and v is not None)
    return kept, dropped


# --- values -----------------------------------------------------------------------------


def constexpr_value(value):
    """A JSON constexpr value as Python: {"dtype": "fp16"} -> tl.fp16, {"float": "inf"} -> inf."""
    if isinstance(value, dict):
        if "dtype" in value:
            import triton.language as tl

            return tl.dtype(value["dtype"])
        if "float" in value:
            return float(value["float"])
        raise BridgeError("unknown constexpr value %r" % (value,))
    return value


def _flat(params):
    """(path, param) for every leaf parameter, tuple items included."""
    out = []

    def walk(p, path):
        if p.get("kind") == "tuple":
            for j, item in enumerate(p.get("items") or []):
                walk(item, path + (j,))
        else:
            out.append((path, p))

    for i, p in enumerate(params):
        walk(p, (i,))
    return out


def _is_constant(p):
    return p["kind"] in ("constexpr", "none") or bool(p.get("equal_to_1"))


def _constant_of(p):
    if p["kind"] == "none":
        return None
    if p["kind"] == "constexpr":
        return constexpr_value(p.get("value"))
    return 1  # an int specialized as equal to 1


# --- ASTSource per flavour --------------------------------------------------------------


def _source_constexprs(ASTSource, fn, params):
    def sig_of(p, path):
        if p.get("kind") == "tuple":
            return tuple(sig_of(item, path + (j,)) for j, item in enumerate(p.get("items") or []))
        return "constexpr" if _is_constant(p) else p["type"]

    signature = {p["name"]: sig_of(p, (i,)) for i, p in enumerate(params)}
    constexprs = {}
    attrs = {}
    for path, p in _flat(params):
        if _is_constant(p):
            constexprs[path] = _constant_of(p)
        elif p.get("divisible_16"):
            attrs[path] = [["tt.divisibility", 16]]
        for extra in p.get("attrs") or []:  # recorded backend attributes (e.g. AMD pointer range)
            if not _is_constant(p):
                attrs.setdefault(path, [])
                if list(extra) not in attrs[path]:
                    attrs[path].append(list(extra))
    return ASTSource(fn, signature, constexprs, attrs)


def _old_signature(params):
    if any(p.get("kind") == "tuple" for p in params):
        raise Unsupported("tuple arguments need Triton 3.3 or later; this Triton's ASTSource cannot take them")
    signature, constants, divisible, equal_to_1 = {}, {}, [], []
    for i, p in enumerate(params):
        kind = p["kind"]
        if kind == "constexpr":
            constants[p["name"]] = constexpr_value(p.get("value"))
            continue
        if kind == "tensordesc":
            raise Unsupported("host tensor descriptor arguments need Triton 3.4 or later")
        signature[p["name"]] = "*i8" if kind == "none" else p["type"]
        if kind == "none":
            constants[p["name"]] = None
            divisible.append(i)
        elif p.get("equal_to_1"):
            constants[p["name"]] = 1
            equal_to_1.append(i)
        elif p.get("divisible_16"):
            divisible.append(i)
    return signature, constants, divisible, equal_to_1


def _source_hints(ASTSource, fn, params, backend):
    signature, constants, divisible, equal_to_1 = _old_signature(params)
    cls = type(backend.get_attrs_descriptor([], []))
    hints = {i: 16 for i in divisible}
    hints.update({i: 1 for i in equal_to_1})
    return ASTSource(fn, signature, constants, cls.from_hints(hints))


def _source_sets(ASTSource, fn, params):
    from triton.compiler.compiler import AttrsDescriptor

    signature, constants, divisible, equal_to_1 = _old_signature(params)
    return ASTSource(fn, signature, constants, AttrsDescriptor(divisible_by_16=set(divisible), equal_to_1=set(equal_to_1)))


def make_source(triton, fn, params, backend):
    """The ASTSource of `fn` specialized as `params` say, in this Triton's own terms."""
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    given = [p["name"] for p in params]
    if names != given:
        raise BridgeError("the kernel's parameters %s do not match the job's %s" % (names, given))
    flavor = api_flavor(triton)
    descriptors = any(p.get("kind") == "tensordesc" for _, p in _flat(params))
    if descriptors and importlib.util.find_spec("triton.tools.tensor_descriptor") is None:
        raise Unsupported("host tensor descriptor arguments need Triton 3.4 or later "
                          "(this Triton has no triton.tools.tensor_descriptor)")
    if flavor == FLAVOR_CONSTEXPRS:
        return flavor, _source_constexprs(ASTSource, fn, params)
    if flavor == FLAVOR_HINTS:
        return flavor, _source_hints(ASTSource, fn, params, backend)
    return flavor, _source_sets(ASTSource, fn, params)


# --- metadata ---------------------------------------------------------------------------


def plain(value, depth=0):
    """JSON-safe copy of compile metadata (GPUTarget, namedtuples, tuples, sets, bytes)."""
    if depth > 6:
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "_asdict"):
        return {str(k): plain(v, depth + 1) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return "<%d bytes>" % len(value)
    if hasattr(value, "backend") and hasattr(value, "arch"):
        return {"backend": value.backend, "arch": value.arch, "warp_size": getattr(value, "warp_size", None)}
    if hasattr(value, "__dict__"):
        return {str(k): plain(v, depth + 1) for k, v in vars(value).items() if not str(k).startswith("_")}
    return repr(value)


# --- an MLIR reproducer of make_ttir ----------------------------------------------------


def run_ttir_stage(backend, path, options, out_path):
    """Run this Triton's make_ttir stage on the module at `path` (the module a make_ttir
    reproducer holds: the frontend's TTIR, not yet inlined or canonicalized) and write the TTIR
    it makes to `out_path`, which triton.compile then takes from make_ttgir on."""
    try:
        from triton._C.libtriton import ir
    except ImportError:
        raise BridgeError("this Triton has no triton._C.libtriton.ir to parse MLIR with") from None
    context = ir.context()
    ir.load_dialects(context)
    if hasattr(backend, "load_dialects"):
        backend.load_dialects(context)
    module = ir.parse_mlir_module(path, context)
    module.context = context
    parsed = backend.parse_options(dict(options))
    stages = {}  # type: dict
    try:
        from triton.backends.compiler import Language
    except ImportError:
        backend.add_stages(stages, parsed)
    else:
        backend.add_stages(stages, parsed, Language.TRITON)
    if "ttir" not in stages:
        raise BridgeError("this Triton's backend has no ttir stage")
    module = stages["ttir"](module, {})
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(str(module))
    return out_path
