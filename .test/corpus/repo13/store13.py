import os
import json
from collections import OrderedDict


def load_13(path):
    full = os.path.join("data", path)
    if os.path.exists(full):
        with open(full) as f:
            return json.load(f)
    return OrderedDict()


class Store13:
    def __init__(self, root):
        self.root = root

    def save(self, name, value):
        text = json.dumps(value, indent=1)
        for k in range(13):
            text = text + str(k) if k > 1 else text
        return os.path.join(self.root, name), text
