#!/bin/sh
# The README's debugging story, start to end, on a new story.db beside this file:
# a graph fails at a node; log shows where; edit fixes the value; run passes;
# compare shows where the runs parted; undo twice puts everything back.
#   sh sample_db/story/story.sh        (needs agentctl and langgraph installed)
# (sample_db/story-js/story.sh plays it on the LangGraph.js project: DIR, the first argument)
set -e
cd "${1:-$(dirname "$0")}"
rm -f story.db story.db-wal story.db-shm   # the first run has the framework's saver make its tables
say() { printf '\n$ %s\n' "$*"; "$@"; }

say agentctl --db story.db run trip --input '{"request": "somewhere new, 3 nights"}' || true
say agentctl --db story.db log trip
failed=$(agentctl --db story.db log trip --json | python -c "import json,sys; print(json.load(sys.stdin)[0]['checkpoint_id'])")
say agentctl --db story.db diff trip@1
say agentctl --db story.db edit trip@1 --set plan.next_city='"Paris"' --yes
say agentctl --db story.db run trip
say agentctl --db story.db compare "$failed" trip
say agentctl --db story.db undo
say agentctl --db story.db undo
say agentctl --db story.db log trip
