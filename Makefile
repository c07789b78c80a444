# hongbao: `make demo` runs the red-packet scenario end to end through the Lambda runtime
# emulator on a local Redis it starts itself; `make test` runs every test. Both install what
# is missing first (scripts/install-deps.sh).

CARGO    ?= cargo
PY       := .venv/bin/python
BINARIES := -p create-packet -p grab -p claim -p reclaim-cron -p wallet -p next-order-code -p vote

.PHONY: demo test deps release fmt unit replicas clippy doc lint e2e bench sam-build clean

## demo: build the functions and play the red-packet scenario under the Lambda emulator
demo: deps release
	$(PY) scripts/demo.py

## test: unit, property and integration tests (real redis-server, standalone + cluster),
##       clippy, template lint, and the end-to-end tests under the Lambda emulator
test: deps fmt unit replicas clippy doc lint release e2e

deps:
	scripts/install-deps.sh

release:
	$(CARGO) build --release --locked $(BINARIES)

unit:
	$(CARGO) test --workspace --locked

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --locked -p hongbao-shared

fmt:
	$(CARGO) fmt --all --check

## replicas: the red-packet, order-code, vote and workload suites again, their cluster half on a
##           3-master + 3-replica cluster with REDIS_WAIT_REPLICAS=1 (every money write acknowledged
##           by its replica)
replicas:
	HONGBAO_TEST_CLUSTER_REPLICAS=1 $(CARGO) test --locked -p hongbao-tests \
	  --test red_packets --test order_codes --test voting --test workload

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

lint:
	scripts/check-template.sh

e2e:
	$(PY) scripts/e2e_rie.py

## bench: grabs, order codes and votes per second through `shared`, beside redis-benchmark;
##        a 100,000-packet reclaim backlog drained by one reclaim run
bench: deps
	$(CARGO) bench -p hongbao-tests --bench grab_throughput
	$(CARGO) bench -p hongbao-tests --bench order_codes
	$(CARGO) bench -p hongbao-tests --bench voting
	$(CARGO) bench -p hongbao-tests --bench reclaim_backlog

## sam-build: `sam build` (cargo lambda + zig cross-compile to arm64)
sam-build:
	scripts/install-deps.sh --with-sam-build
	PATH="$(CURDIR)/.venv/bin:$$PATH" sam build

clean:
	$(CARGO) clean
	rm -rf .aws-sam
