# SPDX-License-Identifier: Apache-2.0
# fidelity: corpus program
"""Stand-in training program of the fidelity corpus: the python stand-in records one line per run."""
import sys

print("eval.py", sys.argv[1:])
