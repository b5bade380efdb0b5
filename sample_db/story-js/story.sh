#!/bin/sh
# The README's debugging story for a LangGraph.js project, on a new story.db beside this
# file: the commands of sample_db/story/story.sh, here, where langgraph.json names the
# LangGraph.js graph (run in node, with the packages npm installed here).
#   cd sample_db/story-js && npm install && sh story.sh   (needs agentctl and node 20+)
set -e
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../story/story.sh" "$here"
