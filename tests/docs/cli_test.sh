#!/usr/bin/env bash
# docs/CLI.md lists every subcommand and every flag: for each subcommand that
# `pipewright --help` names, each long flag its `--help` prints must appear
# (as `--flag`) in that subcommand's section, "## `pipewright <name>`".
# Subcommands this build cannot run (run, generate, ... in a planner-only
# build) are skipped with a note.
#
# Usage: cli_test.sh PIPEWRIGHT REPO_ROOT
set -u
pw=${1:?usage: cli_test.sh PIPEWRIGHT REPO_ROOT}
doc=${2:?usage: cli_test.sh PIPEWRIGHT REPO_ROOT}/docs/CLI.md
[[ -f $doc ]] || { echo "cli_test: $doc is missing"; exit 1; }

subcommands=$("$pw" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[[ -n $subcommands ]] || { echo "cli_test: no subcommands in '$pw --help'"; exit 2; }

missing=0
checked=0
for cmd in $subcommands; do
  if ! help=$(COLUMNS=200 "$pw" "$cmd" --help 2>&1); then
    echo "note: skipped '$cmd' (its --help fails in this build: ${help%%$'\n'*})"
    continue
  fi
  section=$(awk -v h="## \`pipewright $cmd\`" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$doc")
  if [[ -z $section ]]; then
    echo "docs/CLI.md: no section '## \`pipewright $cmd\`'"
    missing=$((missing + 1))
    continue
  fi
  # The option column only (a description may mention other commands' flags).
  for flag in $(sed -n '/^Options:/,$p' <<<"$help" | grep -oE -- '^ +(-[a-zA-Z],)?--[a-z0-9][a-z0-9-]*(,--[a-z0-9][a-z0-9-]*)*' |
                grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u); do
    [[ $flag == --help ]] && continue
    checked=$((checked + 1))
    if ! grep -qF -- "\`$flag\`" <<<"$section"; then
      echo "docs/CLI.md: section '$cmd' does not list $flag"
      missing=$((missing + 1))
    fi
  done
done
echo "cli_test: $checked flags checked, $missing missing from docs/CLI.md"
(( missing == 0 ))
