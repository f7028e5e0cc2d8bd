"""Alternative call paths of an executable (numpy in, numpy out), timed beside the one
``runtime.xla`` takes by ``bench/runtime_dispatch.py``. Not used on any call path."""
from __future__ import annotations

import numpy as np

from . import xla


def call_variants(exe: "xla.Executable") -> dict:
    """Alternative call paths (numpy in -> numpy out) to compare with :func:`execute`."""
    loaded = exe.loaded
    avals = exe.in_avals
    handlers = exe._handlers

    def put(x, aval):
        return xla._bdp(aval, xla._sharding, [x], xla._devices, committed=True, enable_x64=True)

    def v_disassemble(*args):  # the research notes' path
        bufs = [put(x, a) for x, a in zip(args, avals)]
        return [np.asarray(o[0]) for o in loaded.execute_sharded(bufs).disassemble_into_single_device_arrays()]

    def v_xla_client_execute(*args):  # xla_client's LoadedExecutable.execute wrapper
        bufs = [put(x, a) for x, a in zip(args, avals)]
        return [np.asarray(o) for o in loaded.execute(bufs)]

    def v_fresh_avals(*args):  # aval built per call from the numpy array
        bufs = [put(x, xla._Aval(x.shape, x.dtype)) for x in args]
        return [np.asarray(o) for o in loaded.execute_sharded(bufs).consume_with_handlers(handlers)]

    def v_dlpack_put(*args):
        bufs = [xla._jax.dlpack_managed_tensor_to_buffer(x.__dlpack__(), xla._device, None) for x in args]
        return [np.asarray(o) for o in loaded.execute_sharded(bufs).consume_with_handlers(handlers)]

    def v_handlers_did_copy(*args):
        bufs = [put(x, a) for x, a in zip(args, avals)]
        return [o._single_device_array_to_np_array_did_copy()[0]
                for o in loaded.execute_sharded(bufs).consume_with_handlers(handlers)]

    def v_chosen(*args):
        return xla.execute(exe, args)

    def v_put_each(*args):  # the call path before staging buffers
        return xla._outputs(exe, exe._run(xla._put_all(args, avals)))

    bufs0 = [put(np.zeros(a.shape, a.dtype), a) for a in avals]

    def v_device_resident_no_host(*args):  # lower bound: args already on device, no numpy out
        return loaded.execute_sharded(bufs0).consume_with_handlers(handlers)

    def v_device_resident_block(*args):
        outs = loaded.execute_sharded(bufs0).consume_with_handlers(handlers)
        for o in outs:
            o.block_until_ready()
        return outs

    return {
        "chosen (execute): staging buffers for small inputs, else put; execute_sharded+handlers+_host_outputs": v_chosen,
        "put(precomputed aval) per input+execute_sharded+consume_with_handlers+np.asarray": v_put_each,
        "put+execute_sharded+disassemble_into_single_device_arrays": v_disassemble,
        "put+xla_client LoadedExecutable.execute": v_xla_client_execute,
        "put(aval built per call)+handlers": v_fresh_avals,
        "dlpack put+handlers": v_dlpack_put,
        "put+handlers+_single_device_array_to_np_array_did_copy": v_handlers_did_copy,
        "device-resident args, execute+handlers, no host transfer": v_device_resident_no_host,
        "device-resident args, execute+handlers+block_until_ready": v_device_resident_block,
    }
