"""``accelerate launch`` target for tests: ``poly_epo_trl.train`` with accelerate's state switched to FSDP on CPU.

accelerate 1.15 turns ``ACCELERATE_USE_FSDP`` into FSDP only on GPUs and other accelerators; on CPU it trains DDP
(``poly_epo_trl.train`` refuses that at the door, ``test_engines.test_fsdp_on_cpu_without_the_shim_is_refused``).
This shim makes ``AcceleratorState`` take the FSDP branch on CPU, so the model is wrapped with the FSDP plugin the
launcher built from the config: sharded parameters, gloo collectives, the state-dict types, save and resume run
for real. Not covered here: FSDP's mixed-precision policies, CUDA streams and offload, which need GPUs.
"""

from accelerate.state import AcceleratorState, PartialState
from accelerate.utils import DistributedType

from poly_epo_trl.commands.train import main

_init = AcceleratorState.__init__


def _fsdp_on_cpu(self, *args, fsdp_plugin=None, **kwargs):
    _init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
    if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
        self.distributed_type = DistributedType.FSDP
        self.fsdp_plugin = fsdp_plugin
        PartialState._shared_state["distributed_type"] = DistributedType.FSDP


AcceleratorState.__init__ = _fsdp_on_cpu

if __name__ == "__main__":
    main()
