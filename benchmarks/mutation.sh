#!/usr/bin/env bash
# Goal 4 (issue 11): the mutation score of the default `harness fuzz` campaign against the core of
# openprogram/agent/agent_loop.py (_run_loop, _execute_tool_calls, _skip_tool_call,
# _stream_assistant_response). mutmut runs the one test [tool.mutmut] selects in pyproject.toml:
# tests/mutation/test_default_campaign.py, i.e. run_campaign() with DEFAULT_EXAMPLES and
# DEFAULT_SEED. It works on a copy of the checkout so the worktree stays clean.
#
#   benchmarks/mutation.sh [WORKDIR]        # default /tmp/harness-mutation; MUTMUT_CHILDREN=2
#   cd WORKDIR && mutmut show NAME          # the diff of one survivor
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/harness-mutation}
rm -rf "$work"
mkdir -p "$work"
(cd "$here" && tar --exclude=.git --exclude=mutants --exclude=.venv -cf - .) | tar -xf - -C "$work"
cd "$work"
prefix="openprogram.agent.agent_loop.x_"
mutmut run --max-children "${MUTMUT_CHILDREN:-2}" \
    "${prefix}_run_loop__mutmut_*" \
    "${prefix}_execute_tool_calls__mutmut_*" \
    "${prefix}_skip_tool_call__mutmut_*" \
    "${prefix}_stream_assistant_response__mutmut_*" || true
mutmut results --all true 2>/dev/null | grep -E "x__(run_loop|execute_tool_calls|skip_tool_call|stream_assistant_response)__" \
    | awk '{print $NF}' | sort | uniq -c || true
echo "survivors:"
mutmut results | grep -E "x__(run_loop|execute_tool_calls|skip_tool_call|stream_assistant_response)__" || true
