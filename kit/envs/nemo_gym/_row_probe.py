"""Run by NeMo-Gym's own interpreter (kit.envs.nemo_gym.rows): check rows against a resources server's
own request models. Not imported by the kit (this file imports NeMo-Gym, which the kit's environment
does not have).

    python _row_probe.py SERVER_FOLDER < rows.jsonl    # one JSON line out per row: {"index", "error"}

Each row is validated as the body of the server's `seed_session` and, with an empty response, of its
`verify` (the models their signatures name), which is what NeMo-Gym's agents send them.
"""

import importlib
import inspect
import json
import sys
import time

from pydantic import BaseModel, ValidationError


def body_model(server_class, method):
    for parameter in inspect.signature(getattr(server_class, method)).parameters.values():
        annotation = parameter.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
    return None


def server_class(folder):
    from nemo_gym.base_resources_server import SimpleResourcesServer

    module = importlib.import_module(f"resources_servers.{folder}.app")
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, SimpleResourcesServer)
        and value.__module__ == module.__name__
    ]
    return found[-1]


def first_error(error):
    detail = error.errors()[0]
    return f"field '{'.'.join(str(p) for p in detail['loc'])}': {detail['msg']}"


def main():
    cls = server_class(sys.argv[1])
    models = {"seed_session": body_model(cls, "seed_session"), "verify": body_model(cls, "verify")}
    response = {
        "id": "resp_probe",
        "created_at": int(time.time()),
        "model": "probe",
        "object": "response",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    for index, line in enumerate(sys.stdin):
        row = json.loads(line)
        error = None
        for endpoint, model in models.items():
            if model is None or error:
                continue
            body = {**row, "response": response} if endpoint == "verify" else row
            try:
                model.model_validate(body)
            except ValidationError as problem:
                error = f"{endpoint}: {first_error(problem)}"
        print(json.dumps({"index": index, "error": error}))


if __name__ == "__main__":
    main()
