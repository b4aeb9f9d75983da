# SPDX-License-Identifier: Apache-2.0
"""The checkpoint protocol: markers, resume paths, requeue decisions and interval advice (pure core).
The rendered script's hook point is templates/_hook_checkpoint.sh.j2. Not built yet (the checkpoint issue)."""
