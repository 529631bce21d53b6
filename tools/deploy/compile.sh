#!/bin/sh
# `sh tools/deploy/compile.sh <out-dir>`: the JavaScript the container image runs. Compiles what tsconfig.build.json
# names into <out-dir> with the same tree, and copies the files the code reads beside itself (Lua, console assets).
set -eu
out=$1
npx tsc -p tsconfig.build.json --outDir "$out"
find libs services tools/engine-sim tools/deploy -type f ! -name '*.ts' ! -name '*.sh' -exec cp --parents {} "$out/" \;
