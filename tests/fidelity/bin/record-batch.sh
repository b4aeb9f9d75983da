# SPDX-License-Identifier: Apache-2.0
# BASH_ENV of every job the fidelity harness submits: bash sources it before it runs any script.
# It appends "batch ..." to $FIDELITY_LOG when the script being run ($0) has the content of the
# corpus script under test (sha256 = $FIDELITY_SCRIPT_SHA), and "other-script <sha> <path> ..." for any
# other script file (for the failure report; gpusub's own wrapper shows up there). One line, one write.
# For the corpus script's batch step it also writes the whole environment (env -0) to env.<job>.<task>
# next to the log: test_gpusub_matches_sbatch compares it with sbatch's.
if [ -n "${FIDELITY_LOG-}" ] && [ -n "${FIDELITY_SCRIPT_SHA-}" ] && [ -f "$0" ] && [ -r "$0" ]; then
    __fid_sha=$(sha256sum < "$0" 2>/dev/null)
    __fid_sha=${__fid_sha%% *}
    if [ "$__fid_sha" = "$FIDELITY_SCRIPT_SHA" ]; then
        __fid_what=batch
    else
        __fid_what="other-script ${__fid_sha:0:12} ${0// /_}"
    fi
    printf '%s %s %s %s %s %s %s\n' "$__fid_what" "${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:--}}" \
        "${SLURM_ARRAY_TASK_ID:--}" "${SLURM_STEP_ID:-batch}" "${SLURMD_NODENAME:--}" "${LOCAL_RANK:--}" "$$" \
        >> "$FIDELITY_LOG" 2>/dev/null
    # the batch step's whole environment, once per job (array task), as the script itself gets it
    if [ "$__fid_what" = batch ] && [ -z "${SLURM_STEP_ID-}" ]; then
        env -0 > "${FIDELITY_LOG%/*}/env.${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:--}}.${SLURM_ARRAY_TASK_ID:--}" 2>/dev/null
    fi
    unset __fid_sha __fid_what
fi
