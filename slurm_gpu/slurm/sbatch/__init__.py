# SPDX-License-Identifier: Apache-2.0
"""sbatch's option language: the option table, value grammars, #SBATCH lexing, parsing, the request."""
