#!/usr/bin/env python3
"""read_tfevents.py — reads a fastlora run's TensorBoard event files with TensorBoard's own reader
(tensorboard.backend.event_processing.event_accumulator.EventAccumulator, from PyPI `tensorboard`)
and prints what it found as JSON: {"scalars": {tag: [[step, value], ...]}, "text": {tag: "..."}}.

Used by tests/test_train_tfevents.c, which compares every scalar with metrics.jsonl (the test
skips when `import tensorboard` fails). Not a writer: fastlora writes the files itself
(src/train/tfevents.c).

    python3 tools/read_tfevents.py OUT/runs
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: read_tfevents.py RUNS_DIR")
    acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={event_accumulator.SCALARS: 0,
                                                                          event_accumulator.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    out = {"scalars": {}, "text": {}}
    for tag in tags.get("scalars", []):
        out["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
    for tag in tags.get("tensors", []):
        events = acc.Tensors(tag)
        if events and events[0].tensor_proto.string_val:
            out["text"][tag] = events[0].tensor_proto.string_val[0].decode("utf-8")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
