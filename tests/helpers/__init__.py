"""What the tests share: tiny models and datasets (``tiny``, ``agents``), real servers run on loopback
(``judge_server``, ``hub_server``, ``ports``), scripts that tests launch as processes (``distributed_run``,
``fsdp_on_cpu``, ``vllm_*_run``), slow rewards and judges for timing, the brute-force reference of the set
advantages, LeetCode problems, the sandbox's tools and the data beside the clone (``shared_data``). conftest.py puts
this folder on the import path, so tests import them by their names (``from tiny import toy_dataset``)."""
