"""SkyPilot support: task YAMLs in `sky/`, offline validation, launch commands, and the node entry.

SkyPilot itself runs on the machine that launches clusters, in its own environment (`make sky-venv`
builds `.venv-sky`): its `click<8.2` pin conflicts with `huggingface_hub`'s `click>=8.4.2`, so it cannot
share the training environment. The kit calls it through a subprocess (`kit.sky.sky_venv`).

On the cluster, every node runs `python -m kit sky node-entry`, which maps SkyPilot's environment
(`SKYPILOT_NODE_RANK`, `SKYPILOT_NODE_IPS`, `SKYPILOT_NUM_NODES`, `SKYPILOT_NUM_GPUS_PER_NODE`) to the
vLLM-server and trainer roles (`kit.sky.node_entry`); `kit sky rehearse` runs the same entry as local
CPU "nodes".
"""
