"""A batch driver in a process of its own (a kernel, say), for the test that kills it mid-run.

``python -m tests.batch._driver URL STORE HOME COUNT``: COUNT prompts on a LocalCluster of its own, results to STORE.
"""

from __future__ import annotations

import sys

from eca_notebook.batch import batch, local_cluster


def main() -> None:
    url, store, home, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    env = {"HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache",
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    config = {"localModel": False, "defaultModel": "fake/m1",
              "providers": {"fake": {"api": "openai-chat", "url": url, "models": {"m1": {}}}}}
    with local_cluster(n_workers=2, threads_per_worker=2, silence_logs=50) as client:
        batch([f"driven {i}" for i in range(count)], executor=client, workspace=home, config=config, env=env,
              store=store, progress=False)


if __name__ == "__main__":
    main()
