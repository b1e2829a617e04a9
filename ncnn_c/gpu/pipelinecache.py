"""PipelineCache: the live pipeline objects of one device, and their persistent cache file.

Three layers:

* live artifacts: every pipeline request gets a 128-bit digest (shader index or SPIR-V
  murmur3, option bits, local size, subgroup size, specialization hashes); a repeated
  request returns the same shader module / layouts / pipeline / update template without
  touching Vulkan. The cache owns these objects; ``Pipeline`` only borrows the handles.
* SPIR-V entries: compiled SPIR-V of builtin shaders, keyed by (shader index, option
  bits) and checked against the shader's current source hash, so a warm start skips GLSL
  compilation. Raw SPIR-V given by the caller is never stored here: it has no stable key.
* the driver's ``VkPipelineCache``: passed to every pipeline creation, saved as a blob and
  merged back on load.

``save_cache`` / ``load_cache`` move the last two through ``ncnn_c.cache`` (format and
checks live there: ``reader_expect`` says what this library accepts); without a target they
use the entry ``"default"`` of the per-user default store (``cache/paths.py``), and
``save_cache(..., merge=True)`` merges with the cache already there under a file lock or
the store's transaction (``docs/cache-stores.md``). Any load failure rejects the whole file
and leaves this object exactly as it was; a rejected cache is a cache miss, never an error
for the application.
"""

from __future__ import annotations

import logging
import numbers
import os
import struct
import threading
import weakref

from .. import __version__
from ..cache import checks, fileio, paths
from ..cache.format import MAGIC_BYTES, CacheMissing, CacheRejected, Identity, SpirvEntry, encode, identity_of
from ..cache.format import resolve_key as _resolve_key
from ..cache.hashing import fnv1a32, murmur3_32
from ..errors import NcnnError
from . import _vk_pipeline as _vkp
from . import compiler
from .device import check_process, in_forked_child
from .lifetime import UseCount
from .spirv import ShaderInfo, resolve_shader_info

log = logging.getLogger("ncnn_c")

LOCAL_SIZE_SPEC_IDS = (233, 234, 235)


def _version_number(v: str) -> int:
    parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in v.split(".")[:3]]
    parts += [0] * (3 - len(parts))
    return parts[0] * 1000000 + parts[1] * 1000 + parts[2]


# The library version stored in (and required by) cache files: a new release may change
# shader generation in ways the per-shader source hashes do not see (the preamble).
NCNN_VERSION = _version_number(__version__)


def reader_expect(identity: Identity | None, key: bytes | None = None) -> checks.Expect:
    """What this library accepts in a cache file for a device of ``identity`` (None: no
    device fields checked): its version, entries whose shader source is current, SPIR-V that
    resolves and has its shader's interface, and with ``key`` a valid MAC."""
    return checks.Expect(
        identity,
        compiler.source_hash_by_id,
        resolve_shader_info,
        compiler.interface_mismatch,
        key,
        NCNN_VERSION,
    )


class PipelineCacheError(NcnnError):
    """A pipeline that could not be created (bad request, compile or Vulkan failure)."""


def pack_specializations(specializations) -> bytes:
    """4 bytes per value: ints as 32-bit (signed or unsigned), floats as IEEE float32."""
    out = bytearray()
    for v in specializations or ():
        if isinstance(v, numbers.Integral):
            # Negative ints wrap to their two's complement bits, as a C int32 would.
            out += struct.pack("<I", int(v) & 0xFFFFFFFF)
        elif isinstance(v, numbers.Real):
            out += struct.pack("<f", float(v))
        else:
            raise PipelineCacheError(f"specialization value {v!r} is neither int nor float")
    return bytes(out)


def _log2_nibble(v: int) -> int:
    # Exact for powers of two up to 2^14; anything else shares nibble 15 and is told
    # apart by the exact request kept with each artifact.
    if v > 0 and v & (v - 1) == 0 and v.bit_length() <= 15:
        return v.bit_length() - 1
    return 15


def make_digest(
    key: int, raw: bool, opt_bits: int, local_size, subgroup_size: int, spec_data: bytes
) -> bytes:
    """The 128-bit request digest: u32 shader index or SPIR-V murmur3, u16 option bits
    (bit 15 = raw SPIR-V), u16 of four log2 nibbles (local x/y/z, subgroup size),
    u32 specialization murmur3, u32 specialization fnv1a."""
    flags = (opt_bits & 0x7FFF) | (0x8000 if raw else 0)
    x, y, z = local_size
    sizes = _log2_nibble(x) | _log2_nibble(y) << 4 | _log2_nibble(z) << 8 | _log2_nibble(subgroup_size) << 12
    return struct.pack(
        "<IHHII",
        key & 0xFFFFFFFF,
        flags,
        sizes,
        murmur3_32(spec_data),
        fnv1a32(spec_data),
    )


class Artifact:
    """The live Vulkan objects of one pipeline request (owned by the cache)."""

    __slots__ = (
        "request",
        "shader_module",
        "descriptorset_layout",
        "pipeline_layout",
        "pipeline",
        "descriptor_update_template",
        "shader_info",
    )

    def __init__(self, request, shader_info: ShaderInfo) -> None:
        self.request = request
        self.shader_info = shader_info
        self.shader_module = None
        self.descriptorset_layout = None
        self.pipeline_layout = None
        self.pipeline = None
        self.descriptor_update_template = None


class _SpirvRecord:
    __slots__ = ("source_hash", "spirv", "shader_info")

    def __init__(self, source_hash: int, spirv: bytes, shader_info: ShaderInfo) -> None:
        self.source_hash = source_hash
        self.spirv = spirv
        self.shader_info = shader_info


class PipelineCache:
    """Pipeline artifacts, SPIR-V and driver cache of one VulkanDevice."""

    def __init__(self, vkdev, key: bytes | str | None = None) -> None:
        if vkdev is None:
            raise PipelineCacheError("PipelineCache needs a VulkanDevice")
        self.vkdev = vkdev
        # with a key every file saved carries an HMAC-SHA256 and every file loaded must
        # (docs/cache-stores.md: what it protects); None: $NCNN_C_CACHE_KEY, if set
        self._key = _resolve_key(key)
        self.device_index = getattr(vkdev, "device_index", -1)
        self._lock = threading.RLock()
        self._digests: dict[bytes, list[Artifact]] = {}
        self._artifacts: list[Artifact] = []
        self._spirv: dict[tuple[int, int], _SpirvRecord] = {}
        # requests and SPIR-V keys being built right now, by whichever thread got there first
        self._building: dict[tuple, threading.Event] = {}
        self._compiling: dict[tuple[int, int], threading.Event] = {}
        # builds running outside the lock; destroy() and a load's driver-cache merge wait
        # for none (the VkPipelineCache is in use by them)
        self._inflight = 0
        self._idle = threading.Condition(self._lock)
        self._vk_pipeline_cache = None
        self._destroyed = False
        # inferences using this cache's pipelines hold a use (gpu/lifetime.py): clear() and
        # destroy() wait for them before freeing a handle
        self.uses = UseCount("PipelineCache")
        self._stats = dict.fromkeys(
            (
                "compiled",
                "spirv_hits",
                "artifact_hits",
                "pipelines_created",
                "loaded_spirv_entries",
                "stale_spirv_entries",
                "driver_blob_bytes",
                "last_load_bytes",
                "last_save_bytes",
                "last_save_spirv_entries",
            ),
            0,
        )
        self._last_load_error: str | None = None
        self._ensure_vk_pipeline_cache()
        # Our objects must go before the VkDevice does; the weak reference keeps the
        # device from extending the cache's life.
        # destroy() removes it again, so creating and destroying caches never grows the device.
        self._device_hook = None
        add_hook = getattr(vkdev, "add_destroy_hook", None)
        if callable(add_hook):
            ref = weakref.ref(self)

            def _before_device_destroy(_dev, ref=ref) -> None:
                cache = ref()
                if cache is not None:
                    cache.destroy()

            add_hook(_before_device_destroy)
            self._device_hook = _before_device_destroy

    # -- helpers ---------------------------------------------------------------------

    @property
    def _bug_online_cache(self) -> bool:
        return bool(getattr(self.vkdev.info, "bug_corrupted_online_pipeline_cache", False))

    def _ensure_vk_pipeline_cache(self):
        if self._vk_pipeline_cache is None and not self._bug_online_cache:
            try:
                self._vk_pipeline_cache = _vkp.create_pipeline_cache(self.vkdev)
            except NcnnError as e:
                # Only an optimisation: pipelines are still created without it.
                log.warning("PipelineCache: no driver pipeline cache (%s)", e)
        return self._vk_pipeline_cache

    def can_cache_spirv(self, opt) -> bool:
        """SPIR-V depends on the device it was generated for: only cache for our device."""
        index = getattr(opt, "vulkan_device_index", -1)
        return index is None or index == -1 or index == self.device_index

    def _identity(self) -> Identity:
        return identity_of(self.vkdev.info, NCNN_VERSION)

    # -- pipeline requests -------------------------------------------------------------

    def get_pipeline(
        self, shader, opt, specializations=(), local_size=(1, 1, 1), subgroup_size=None
    ) -> Artifact:
        """The artifact for a builtin shader (name or type index) or raw SPIR-V (bytes / words).

        Raises PipelineCacheError (or ShaderCompileError / SpirvError / VulkanError);
        nothing is left behind on failure.
        """
        if self._destroyed:
            raise PipelineCacheError("PipelineCache used after destroy()")
        check_process("PipelineCache.get_pipeline")
        if subgroup_size is None:
            subgroup_size = int(getattr(self.vkdev.info, "subgroup_size", 0) or 0)
        local_size = tuple(int(v) for v in local_size)
        spec_data = pack_specializations(specializations)
        opt_bits = opt.shader_bits()

        raw = not isinstance(shader, (str, numbers.Integral))
        if raw:
            spirv = _spirv_bytes(shader)
            key = murmur3_32(spirv)
        else:
            spirv = None
            key = compiler.resolve_index(shader)
            if compiler.shader_source_hash(key) == 0:
                raise PipelineCacheError(f"shader index {key} does not exist")

        digest = make_digest(key, raw, opt_bits, local_size, subgroup_size, spec_data)
        # The exact request disambiguates the (rare) digest collisions.
        request = (raw, key, opt_bits, local_size, subgroup_size, spec_data, spirv)
        reuse = not self._bug_online_cache

        # GLSL compilation and the Vulkan calls run outside the lock (both release the GIL),
        # so threads building different pipelines overlap; a thread asking for a request
        # another thread is already building waits for that one instead of building it twice.
        while True:
            with self._lock:
                if self._destroyed:
                    raise PipelineCacheError("PipelineCache used after destroy()")
                if reuse:
                    for art in self._digests.get(digest, ()):
                        if art.request == request:
                            self._stats["artifact_hits"] += 1
                            return art
                    pending = self._building.get(request)
                    if pending is None:
                        pending = self._building[request] = threading.Event()
                        self._inflight += 1
                        break
                else:
                    pending = threading.Event()
                    self._inflight += 1
                    break
            # someone else builds it: take theirs, or build it ourselves if theirs failed
            pending.wait()

        try:
            if raw:
                assert spirv is not None  # a raw request carries its SPIR-V
                shader_info = resolve_shader_info(spirv)
            else:
                spirv, shader_info = self._builtin_spirv(key, opt)
            art = self._new_pipeline(
                request, spirv, shader_info, local_size, spec_data, len(specializations or ())
            )
            with self._lock:
                # destroy() waits for builds in flight, so the cache is still alive here
                self._stats["pipelines_created"] += 1
                self._artifacts.append(art)
                if reuse:
                    self._digests.setdefault(digest, []).append(art)
            return art
        finally:
            with self._lock:
                if reuse and self._building.get(request) is pending:
                    del self._building[request]
                self._inflight -= 1
                if not self._inflight:
                    self._idle.notify_all()
            pending.set()

    def _wait_idle(self) -> None:
        # caller holds the lock; no build can start until it is released
        while self._inflight:
            self._idle.wait()

    def _builtin_spirv(self, index: int, opt) -> tuple[bytes, ShaderInfo]:
        opt_bits = opt.shader_bits()
        source_hash = compiler.shader_source_hash(index)
        use_spirv_cache = source_hash != 0 and self.can_cache_spirv(opt)
        if not use_spirv_cache:
            return self._compile(index, opt)
        key = (index, opt_bits)
        while True:
            with self._lock:
                rec = self._spirv.get(key)
                if rec is not None and rec.source_hash == source_hash:
                    self._stats["spirv_hits"] += 1
                    return rec.spirv, rec.shader_info
                pending = self._compiling.get(key)
                if pending is None:
                    pending = self._compiling[key] = threading.Event()
                    break
            # the same shader with the same options is being compiled by another thread
            pending.wait()
        try:
            spirv, shader_info = self._compile(index, opt)
            with self._lock:
                # Same key overwrites: a stale entry (old source hash) is replaced, not kept.
                self._spirv[key] = _SpirvRecord(source_hash, spirv, shader_info)
            return spirv, shader_info
        finally:
            with self._lock:
                if self._compiling.get(key) is pending:
                    del self._compiling[key]
            pending.set()

    def _compile(self, index: int, opt) -> tuple[bytes, ShaderInfo]:
        spirv = compiler.compile_shader(index, opt, self.vkdev)
        with self._lock:
            self._stats["compiled"] += 1
        return spirv, resolve_shader_info(spirv)

    def _new_pipeline(
        self, request, spirv: bytes, shader_info: ShaderInfo, local_size, spec_data, spec_count
    ) -> Artifact:
        if spec_count != shader_info.specialization_count:
            raise PipelineCacheError(
                f"{spec_count} specializations given, the shader declares {shader_info.specialization_count}"
            )
        spec_ids = list(shader_info.specialization_ids) + list(LOCAL_SIZE_SPEC_IDS)
        spec_data = spec_data + struct.pack("<3I", *local_size)
        vkdev = self.vkdev
        art = Artifact(request, shader_info)
        try:
            art.shader_module = _vkp.create_shader_module(vkdev, spirv)
            art.descriptorset_layout = _vkp.create_descriptor_set_layout(vkdev, shader_info.binding_types)
            art.pipeline_layout = _vkp.create_pipeline_layout(
                vkdev, art.descriptorset_layout, shader_info.push_constant_count
            )
            art.pipeline = _vkp.create_compute_pipeline(
                vkdev, self._vk_pipeline_cache, art.shader_module, art.pipeline_layout, spec_ids, spec_data
            )
            art.descriptor_update_template = _vkp.create_descriptor_update_template(
                vkdev, art.descriptorset_layout, art.pipeline_layout, shader_info.binding_types
            )
        except BaseException:
            # Roll back in reverse creation order so a failed request leaks nothing.
            _destroy_artifact(vkdev, art)
            raise
        return art

    # -- lifetime ----------------------------------------------------------------------

    def clear(self) -> None:
        """Destroy every live artifact (dependents first); SPIR-V and driver cache stay.

        Inferences running on the cache's pipelines finish first; later ones on nets that
        used them fail with -1 (``PipelineGone``, logged) until the nets load again."""
        with self.uses.drained(final=False):
            self._clear()

    def _clear(self) -> None:
        with self._lock:
            arts, self._artifacts, self._digests = self._artifacts, [], {}
            if not self._device_alive():
                return
            for art in arts:
                _destroy_artifact(self.vkdev, art)

    def size(self) -> int:
        """Number of live pipeline artifacts."""
        with self._lock:
            return len(self._artifacts)

    def _device_alive(self) -> bool:
        return getattr(self.vkdev, "vk_device", None) is not None and not getattr(
            self.vkdev, "destroyed", False
        )

    def destroy(self) -> None:
        """clear(), then destroy the driver VkPipelineCache. Idempotent; waits for the
        inferences running on the cache's pipelines (later ones fail cleanly)."""
        if self._destroyed:
            return
        self.uses.close()
        with self._lock:
            if self._destroyed:
                return
            self._wait_idle()
            hook, self._device_hook = self._device_hook, None
            remove = getattr(self.vkdev, "remove_destroy_hook", None)
            if hook is not None and callable(remove):
                remove(hook)
            if not self._device_alive():
                # The device already took every object with it; only forget the handles.
                self._artifacts, self._digests, self._vk_pipeline_cache = [], {}, None
                self._destroyed = True
                return
            self._clear()
            if self._vk_pipeline_cache is not None:
                _vkp.destroy_pipeline_cache(self.vkdev, self._vk_pipeline_cache)
                self._vk_pipeline_cache = None
            self._destroyed = True

    def __enter__(self) -> PipelineCache:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __del__(self) -> None:
        try:
            if not getattr(self, "_destroyed", True):
                self.destroy()
        except Exception:
            pass  # interpreter shutdown: the device may already be gone

    # -- persistence -------------------------------------------------------------------

    def default_path(self) -> str:
        """The default store's SQLite file, ``<default_cache_dir()>/pipelines.sqlite3``.

        ``load_cache()`` / ``save_cache()`` without a target read and write its entry
        ``"default"`` (``cache.paths.DEFAULT_MODEL_KEY``) for this device's key: one cache
        shared by every model the user runs on the device. ``python -m ncnn_c run`` and the
        examples keep their caches in the same file, under their own model keys.
        """
        return paths.default_store_path()

    def load_cache(
        self,
        src=None,
        *,
        rejection_log_level: int = logging.INFO,
        source_name: str | None = None,
        key: bytes | str | None = None,
    ) -> int:
        """Load a cache file (bytes-like, path or binary file object); 0 on success.

        Without ``src`` the default store's entry is read (``default_path()``). Any failure
        rejects the whole file, is logged once with its reason (at INFO by default: a rejected
        cache is a miss, not an application error; ``rejection_log_level`` changes that), is
        readable afterwards as ``last_error``, and leaves the cache unchanged. ``source_name`` names the
        source in those lines (a store names its entry).

        With a cache key (``key``, else the one the cache was made with, else
        ``$NCNN_C_CACHE_KEY``) a file without a valid MAC made with it is rejected.
        """
        what = source_name
        mac_key = self._key if key is None else _resolve_key(key)
        try:
            if src is None:
                what = what or f"the default store {self.default_path()!r}"
                data = self._default_entry()
            else:
                src = _path_given_as_bytes(src)
                data = fileio.read_source(src)
            identity = self._identity()
            check_process("PipelineCache.load_cache")
            stale: list = []
            # every check, the driver blob's header included, is made here once
            d = checks.decode_with(data, reader_expect(identity, mac_key), stale)
            with self._lock:
                if self._destroyed:
                    raise CacheRejected("PipelineCache already destroyed")
                self._wait_idle()
                # The merge is the last step that can fail; the SPIR-V map is only touched after it.
                if d.driver_blob and self._ensure_vk_pipeline_cache() is not None:
                    try:
                        _vkp.merge_pipeline_cache_data(self.vkdev, self._vk_pipeline_cache, d.driver_blob)
                    except NcnnError as e:
                        raise CacheRejected(f"driver blob not accepted by the driver: {e}") from e
                for ent, info in zip(d.entries, d.resolved, strict=True):
                    self._spirv[(compiler.index_of_shader_id(ent.shader_id), ent.opt_bits)] = _SpirvRecord(
                        ent.source_hash, ent.spirv, info
                    )
                self._stats["loaded_spirv_entries"] += len(d.entries)
                self._stats["stale_spirv_entries"] += len(stale)
                self._stats["driver_blob_bytes"] = len(d.driver_blob)
                self._stats["last_load_bytes"] = len(data)
                self._last_load_error = None
            for _entry, reason in stale:
                log.warning(
                    "PipelineCache.load_cache: %s: dropped a SPIR-V entry: %s", what or _describe(src), reason
                )
            return 0
        except CacheMissing as e:
            # no file yet is the ordinary first start: a miss, not an error
            self._last_load_error = str(e)
            log.info("PipelineCache.load_cache: %s", e)
            return -1
        except CacheRejected as e:
            self._last_load_error = str(e)
            log.log(
                rejection_log_level, "PipelineCache.load_cache: rejected %s: %s", what or _describe(src), e
            )
            return -1
        except Exception as e:  # never let a cache problem break the application
            self._last_load_error = f"{type(e).__name__}: {e}"
            log.log(
                rejection_log_level,
                "PipelineCache.load_cache: rejected %s: %s",
                what or _describe(src),
                self._last_load_error,
            )
            return -1

    def _default_entry(self) -> bytes:
        """This device's ``"default"`` entry of the default store; CacheMissing before the first save."""
        from ..cache.stores import CacheStoreError, SqliteStore

        path = self.default_path()
        if not os.path.exists(path):  # opening the store would create it
            raise CacheMissing(f"the default store {path!r}: no such file (a first start)")
        dkey = paths.device_key(self.vkdev)
        try:
            with SqliteStore(path, mode="rw") as store:
                data = store.get(paths.DEFAULT_MODEL_KEY, dkey)
        except CacheStoreError as e:
            raise CacheRejected(str(e)) from e
        if data is None:
            raise CacheMissing(
                f"the default store {path!r}: no entry {paths.DEFAULT_MODEL_KEY!r} for device {dkey} yet (a first start)"
            )
        return data

    def save_cache(self, dst=None, merge: bool = False, *, key: bytes | str | None = None) -> int:
        """Write SPIR-V entries and the driver blob to a bytearray, path (atomic) or file object; 0 on success.

        Without ``dst`` the default store's entry is written (``default_path()``; the store and
        its directory are created). With ``merge`` (a path, a bytearray or the default store;
        ignored for a file object, which cannot be read back), the cache already there is
        merged with ours instead of replaced: for a path under an advisory lock on
        ``<path>.lock``, for the store in its transaction, so that processes running
        different models build one shared cache (see ``docs/cache-stores.md``).
        With a cache key (``key``, else the cache's own) the file carries an HMAC-SHA256, and
        a merge keeps only what the file there holds under a valid MAC.
        """
        where = _describe(dst) if dst is not None else f"the default store {self.default_path()!r}"
        if self._destroyed:
            log.error("PipelineCache.save_cache: the cache was destroyed: nothing saved to %s", where)
            return -1
        try:
            mac_key = self._key if key is None else _resolve_key(key)
            if dst is None:
                self._save_default(merge, mac_key, where)
            elif merge and isinstance(dst, (str, os.PathLike)):
                # refused before the lock file is created next to a device node or FIFO
                fileio.check_target(dst)
                with fileio.locked(dst):
                    try:
                        old: bytes | None = fileio.read_source(dst)
                    except CacheMissing:
                        old = None
                    data = self._encode(old, where, mac_key)
                    fileio.write_atomic(dst, data)
            elif merge and isinstance(dst, bytearray):
                data = self._encode(bytes(dst) if dst else None, where, mac_key)
                dst[:] = data
            else:
                data = self._encode(None, where, mac_key)
                fileio.write_target(dst, data)
            return 0
        except Exception as e:
            log.error("PipelineCache.save_cache: cannot save to %s: %s", where, e)
            return -1

    def _save_default(self, merge: bool, key: bytes | None, where: str) -> None:
        from ..cache.stores import SqliteStore

        dkey = paths.device_key(self.vkdev)
        with SqliteStore(self.default_path()) as store:
            if merge:
                store.update(paths.DEFAULT_MODEL_KEY, dkey, lambda old: self._encode(old, where, key))
            else:
                store.put(paths.DEFAULT_MODEL_KEY, dkey, self._encode(None, where, key))

    def _old_cache(self, old: bytes, identity: Identity, where: str, key: bytes | None) -> tuple[list, bytes]:
        """Entries and blob of the cache a merging save would replace; nothing if it is unusable here."""
        stale: list = []
        try:
            # checked as load_cache checks: an entry it would refuse must not enter our file
            d = checks.decode_with(old, reader_expect(identity, key), stale)
        except CacheRejected as e:
            # another device's, another version's or a corrupt file: ours replaces it
            log.info("PipelineCache.save_cache: %s: not merging the cache there: %s", where, e)
            return [], b""
        if stale:
            log.info("PipelineCache.save_cache: %s: dropping %d stale SPIR-V entries", where, len(stale))
        return d.entries, d.driver_blob

    def _encode(self, old: bytes | None, where: str, key: bytes | None) -> bytes:
        """The file bytes of this cache, merged with the cache file ``old`` when given."""
        identity = self._identity()
        old_entries: list = []
        old_blob = b""
        if old is not None:
            old_entries, old_blob = self._old_cache(old, identity, where, key)
        # Our entries win on equal keys; both sides hold current sources only (ours are
        # filtered below, theirs by decode's stale list), so no stale entry survives a merge.
        merged: dict[tuple[int, int], SpirvEntry] = {(e.shader_id, e.opt_bits): e for e in old_entries}
        with self._lock:
            for (index, opt_bits), rec in self._spirv.items():
                # an entry of a shader edited since it was compiled would make the file stale
                if rec.source_hash == compiler.shader_source_hash(index):
                    sid = compiler.shader_id(index)
                    merged[(sid, opt_bits)] = SpirvEntry(sid, opt_bits, rec.source_hash, rec.spirv)
            blob = b""
            if in_forked_child():
                # the driver cache is the parent's: save what is only bytes; a valid blob
                # already in the file is this device's and stays
                log.warning("PipelineCache.save_cache: forked child: saving without our driver blob")
                blob = old_blob if not self._bug_online_cache else b""
            elif self._vk_pipeline_cache is not None and not self._bug_online_cache:
                blob = self._driver_blob(old_blob)
        if blob:
            try:
                # what the driver handed us, checked before it is saved (a load checks it again)
                checks.validate_driver_blob(
                    blob, identity.vendor_id, identity.device_id, identity.pipeline_cache_uuid
                )
            except CacheRejected as e:
                # A blob we would reject on load is worthless; keep the SPIR-V part.
                log.warning("PipelineCache.save_cache: dropping the driver blob: %s", e)
                blob = b""
        entries = [merged[k] for k in sorted(merged)]
        data = encode(identity, entries, blob, key)
        with self._lock:
            self._stats["driver_blob_bytes"] = len(blob)
            self._stats["last_save_bytes"] = len(data)
            self._stats["last_save_spirv_entries"] = len(entries)
        return data

    def _driver_blob(self, old_blob: bytes) -> bytes:
        """Our driver cache data, as a superset of ``old_blob`` when there is one (caller holds the lock).

        The driver alone knows what its blob holds, so the union is built by the driver: a
        temporary VkPipelineCache created from the old blob, our cache merged into it
        (vkMergePipelineCaches), its data read back. Our own VkPipelineCache is only a
        source of the merge and is left as it was. A driver that refuses the old blob (it
        may silently start empty instead) still yields at least our pipelines.
        """
        ours = _vkp.get_pipeline_cache_data(self.vkdev, self._vk_pipeline_cache)
        if not old_blob or old_blob == ours:
            return ours
        try:
            tmp = _vkp.create_pipeline_cache(self.vkdev, old_blob)
        except NcnnError as e:
            log.info("PipelineCache.save_cache: the driver refused the existing blob (%s): keeping ours", e)
            return ours
        try:
            _vkp.merge_pipeline_caches(self.vkdev, tmp, self._vk_pipeline_cache)
            return _vkp.get_pipeline_cache_data(self.vkdev, tmp)
        except NcnnError as e:
            log.info("PipelineCache.save_cache: merging driver blobs failed (%s): keeping ours", e)
            return ours
        finally:
            _vkp.destroy_pipeline_cache(self.vkdev, tmp)

    @property
    def last_error(self) -> str | None:
        """Why the last ``load_cache`` did not load (field, expected, found), None after a success."""
        return self._last_load_error

    def stats(self) -> dict:
        with self._lock:
            d: dict[str, object] = dict(self._stats)
            d["spirv_entries"] = len(self._spirv)
            d["artifacts"] = len(self._artifacts)
            d["last_load_error"] = self._last_load_error
            return d

    def __repr__(self) -> str:
        return f"<PipelineCache device {self.device_index} artifacts={len(self._artifacts)} spirv={len(self._spirv)}>"


def _spirv_bytes(spirv) -> bytes:
    if isinstance(spirv, (bytes, bytearray, memoryview)):
        return bytes(spirv)
    return struct.pack(f"<{len(spirv)}I", *(int(w) & 0xFFFFFFFF for w in spirv))


def _path_given_as_bytes(src):
    """``src`` as a str path when it is bytes that cannot be cache data but name a file
    (``load_cache(b"/path/x.vkcache")``, as a C caller's ``const char*`` arrives), else itself.
    Cache data starts with the magic; a path never holds a NUL."""
    if (
        isinstance(src, bytes)
        and 0 < len(src) < 4096
        and not src.startswith(MAGIC_BYTES)
        and b"\0" not in src
        and os.path.lexists(src)
    ):
        log.info("PipelineCache.load_cache: %r is not cache data but names a file: reading that", src)
        return os.fsdecode(src)
    return src


def _describe(target) -> str:
    if isinstance(target, (str, bytes, os.PathLike)) and not isinstance(target, bytes):
        return repr(os.fspath(target))
    if isinstance(target, (bytes, bytearray, memoryview)):
        return f"{len(target)} bytes in memory"
    return repr(getattr(target, "name", type(target).__name__))


def _destroy_artifact(vkdev, art: Artifact) -> None:
    # Dependents before what they were created from: update template, pipeline, pipeline layout, set layout, module.
    if art.descriptor_update_template is not None:
        _vkp.destroy_descriptor_update_template(vkdev, art.descriptor_update_template)
        art.descriptor_update_template = None
    if art.pipeline is not None:
        _vkp.destroy_pipeline(vkdev, art.pipeline)
        art.pipeline = None
    if art.pipeline_layout is not None:
        _vkp.destroy_pipeline_layout(vkdev, art.pipeline_layout)
        art.pipeline_layout = None
    if art.descriptorset_layout is not None:
        _vkp.destroy_descriptor_set_layout(vkdev, art.descriptorset_layout)
        art.descriptorset_layout = None
    if art.shader_module is not None:
        _vkp.destroy_shader_module(vkdev, art.shader_module)
        art.shader_module = None


# -- the per-device default cache (used when opt.pipeline_cache is None) -------------------

_default_lock = threading.Lock()
_default_caches: dict[int, tuple[object, PipelineCache]] = {}


def default_cache(vkdev) -> PipelineCache:
    """A process-wide PipelineCache for ``vkdev``, created on first use."""
    with _default_lock:
        entry = _default_caches.get(id(vkdev))
        if entry is None or entry[0] is not vkdev:
            entry = (vkdev, PipelineCache(vkdev))
            _default_caches[id(vkdev)] = entry
        return entry[1]


def release_default_cache(vkdev=None) -> None:
    """Destroy the default cache of ``vkdev`` (all devices when None); call before destroying a device."""
    with _default_lock:
        keys = list(_default_caches) if vkdev is None else [id(vkdev)]
        for k in keys:
            entry = _default_caches.pop(k, None)
            if entry is not None:
                entry[1].destroy()
