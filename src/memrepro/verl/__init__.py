"""MemAgent and Mem-α training on verl 0.9.1 (the `train` env): agent loops, reward, launcher.

Modules here import verl lazily or only inside the train env; the names below are the contract
between them and need no verl.
"""

from collections.abc import Mapping
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
AGENT_NAME = "memagent"  # the verl agent loop name, and every training row's `agent_name`
MEMALPHA_AGENT_NAME = "memalpha"  # the Mem-α agent loop (memrepro.verl.agent_loop.MemAlphaLoop)
AGENT_LOOP_CONFIG = PACKAGE_DIR / "agent_loops.yaml"  # rollout.agent.agent_loop_config_path
REWARD_FILE = PACKAGE_DIR / "reward.py"  # reward.custom_reward_function.path
REWARD_NAME = "compute_score"  # reward.custom_reward_function.name
QA_URL_ENV = "MEMREPRO_QA_BASE_URL"  # the Mem-α QA model / judge server, set by memrepro.verl.job
# where memrepro.verl.main (in the train image) writes the image it runs in, set by
# memrepro.verl.job
RAN_IN_ENV = "MEMREPRO_RAN_IN"


def write_ran_in(environ: Mapping[str, str]) -> None:
    """This process's image, as every job records its own (memrepro.software.container_tags, read
    from inside), to $MEMREPRO_RAN_IN where it is set: memrepro.verl.main, in the train image."""
    from memrepro.data.io import write_json_atomic
    from memrepro.software import container_tags

    if environ.get(RAN_IN_ENV):
        write_json_atomic(environ[RAN_IN_ENV], container_tags())
