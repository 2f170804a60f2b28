# dlqf — two commands for a newcomer: `make demo` and `make test`.
# Cargo's target dir lives outside the clone so reruns on one machine are incremental.

CARGO_TARGET_DIR ?= $(HOME)/.cache/dlqf-target
export CARGO_TARGET_DIR
VENV ?= $(HOME)/.cache/dlqf-venv
PYTHON := $(VENV)/bin/python
DUCKDB_VERSION := 2.0.1
MOTO_VERSION := 5.2.1
PYSPARK_VERSION := 4.0.1
# librdkafka's mock Kafka cluster, in a wheel: the Kafka replay tests' broker and reader.
CONFLUENT_KAFKA_VERSION := 2.16.1
# pyarrow writes Parquet with the encodings other writers use (data page v2, a dictionary that
# overflows into plain pages): the tests read those files.
PYARROW_VERSION := 21.0.0
# Independent AMQP and Redis clients, to read back what replays to RabbitMQ and Redis deliver.
PIKA_VERSION := 1.3.2
REDIS_PY_VERSION := 5.2.1
DEBUG_BIN := $(CARGO_TARGET_DIR)/debug/dlqf
RELEASE_BIN := $(CARGO_TARGET_DIR)/release/dlqf
# Headless Chromium opens the HTML report in a test (Debian's package).
CHROMIUM := /usr/bin/chromium
# qemu's user-mode emulator runs the binary on a baseline x86-64 CPU in a test (Debian's package).
QEMU := /usr/bin/qemu-x86_64
# The shells that load the completion scripts, and groff, which formats the man page, in tests.
SHELLS_AND_GROFF := /usr/bin/zsh /usr/bin/fish /usr/bin/groff

.PHONY: demo test bench build release sample-data test-deps clean-bench check-aarch64 fuzz

## Build (debug profile, dependencies optimised) and rank the committed sample dumps.
demo: build
	$(DEBUG_BIN) rank sample_data/vision/
	@echo
	$(DEBUG_BIN) rank sample_data/envelope/ --profile envelope --top 5
	@echo
	$(DEBUG_BIN) rank sample_data/kafka-connect/ --profile kafka-connect

build:
	cargo build

release:
	cargo build --release

## Install what the tests need (DuckDB, moto, pyspark, confluent-kafka, pyarrow, pika and redis-py from PyPI in a
## venv; PostgreSQL, openssl, RabbitMQ, Redis, Chromium and qemu-user from Debian; s3s-fs from crates.io),
## start throwaway PostgreSQL (with TLS), S3, RabbitMQ and Redis servers on loopback, run every test, stop them
## whatever the outcome.
PG_DIR ?= /tmp/dlqf-test-pg
PG_PORT ?= 55432
MOTO_PORT ?= 55500
MOTO_PID := /tmp/dlqf-test-moto.pid
BROKERS_DIR ?= /tmp/dlqf-test-brokers
# RabbitMQ takes AMQP_PORT and the two after it (Erlang's distribution and epmd).
AMQP_PORT ?= 55672
REDIS_PORT ?= 55679
S3_ENV := AWS_ACCESS_KEY_ID=dlqf-test AWS_SECRET_ACCESS_KEY=dlqf-test-secret-8d1f AWS_REGION=us-east-1 \
	AWS_ENDPOINT_URL=http://127.0.0.1:$(MOTO_PORT) AWS_ALLOW_HTTP=true
test: test-deps
	cargo build --all-targets
	scripts/postgres.sh start $(PG_DIR) $(PG_PORT) > $(PG_DIR).url
	scripts/moto.sh start $(VENV)/bin $(MOTO_PORT) $(MOTO_PID) || { scripts/postgres.sh stop $(PG_DIR); exit 1; }
	scripts/brokers.sh start $(BROKERS_DIR) $(AMQP_PORT) $(REDIS_PORT) || { scripts/postgres.sh stop $(PG_DIR); scripts/moto.sh stop $(MOTO_PID); scripts/brokers.sh stop $(BROKERS_DIR); exit 1; }
	$(S3_ENV) DLQF_PYTHON=$(PYTHON) DLQF_S3S_FS=$(S3S_FS) DLQF_CHROMIUM=$(CHROMIUM) DLQF_QEMU=$(QEMU) DLQF_POSTGRES_URL=$$(cat $(PG_DIR).url) DLQF_POSTGRES_TLS=$(PG_DIR)/tls \
	  DLQF_AMQP_URL=amqp://guest:guest@127.0.0.1:$(AMQP_PORT) DLQF_REDIS_URL=redis://127.0.0.1:$(REDIS_PORT) DLQF_BROKERS_DIR=$(BROKERS_DIR) \
	  cargo test --all-targets -- --include-ignored; \
	  status=$$?; scripts/postgres.sh stop $(PG_DIR); scripts/moto.sh stop $(MOTO_PID); scripts/brokers.sh stop $(BROKERS_DIR); rm -f $(PG_DIR).url; exit $$status

DEPS_STAMP := $(VENV)/.deps-$(DUCKDB_VERSION)-$(MOTO_VERSION)-$(PYSPARK_VERSION)-$(CONFLUENT_KAFKA_VERSION)-$(PYARROW_VERSION)-$(PIKA_VERSION)-$(REDIS_PY_VERSION)
# s3s-fs checks credentials (moto accepts any), for the wrong-credentials test.
S3S_FS := $(HOME)/.cargo/bin/s3s-fs
test-deps: $(DEPS_STAMP) $(S3S_FS) $(CHROMIUM) $(QEMU) $(SHELLS_AND_GROFF)

$(CHROMIUM):
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null

$(QEMU):
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user >/dev/null

$(SHELLS_AND_GROFF) &:
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zsh fish groff-base >/dev/null

$(S3S_FS):
	CARGO_TARGET_DIR=$(HOME)/.cache/dlqf-s3s-target cargo install s3s-fs@0.14.1 --features binary --locked

# Spark SQL runs the queries/ files in local mode on the machine's Java 17.
$(DEPS_STAMP):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check duckdb==$(DUCKDB_VERSION) \
	  'moto[server]==$(MOTO_VERSION)' pyspark==$(PYSPARK_VERSION) confluent-kafka==$(CONFLUENT_KAFKA_VERSION) pyarrow==$(PYARROW_VERSION) \
	  pika==$(PIKA_VERSION) redis==$(REDIS_PY_VERSION)
	touch $@

## Regenerate the committed sample dumps (deterministic: same bytes every time).
sample-data: build
	rm -rf sample_data && mkdir -p sample_data/vision sample_data/envelope sample_data/kafka-connect
	$(DEBUG_BIN) gen --profile vision --rows 12000 --seed 7 --start 2026-10-01 --days 28 -o sample_data/vision/2026-10-01_28d.parquet
	$(DEBUG_BIN) gen --profile vision --rows 8000 --seed 8 --start 2026-10-29 --days 14 --malformed 0.002 -o sample_data/vision/2026-10-29_14d.jsonl.gz
	$(DEBUG_BIN) gen --profile envelope --rows 3000 --seed 9 --malformed 0.002 -o sample_data/envelope/dlq.jsonl
	# Kafka Connect dead letters as kcat -J prints them (binary payloads, tombstones).
	python3 tests/support/real_dumps.py kcat sample_data/kafka-connect 1000 3 && rm sample_data/kafka-connect.truth.json

## Benchmarks: release build, 10M-row dumps, dlqf vs DuckDB side by side.
# S3 rows run on s3rver (npm), which serves ranged GETs from the range on disk as S3 does.
S3RVER_DIR := $(HOME)/.cache/dlqf-s3rver
S3RVER := $(S3RVER_DIR)/node_modules/.bin/s3rver
# GNU time reports a command's own peak RSS (see scripts/bench.py's `measure`).
GNU_TIME := /usr/bin/time
## Mutate every input kind (JSON-lines, Parquet, manifests, states) and run dlqf on each mutant
## for FUZZ_SECONDS, 20 s and 1 GiB each; findings (panics, signals, hangs, accepted unsealed
## changes) go to fuzz-findings/; add them to tests/hostile/ with a README as regression cases.
FUZZ_SECONDS ?= 300
fuzz: release
	python3 scripts/fuzz.py --dlqf $(RELEASE_BIN) --seconds $(FUZZ_SECONDS) --out fuzz-findings

bench: release test-deps $(S3RVER) $(GNU_TIME)
	$(PYTHON) scripts/bench.py --dlqf $(RELEASE_BIN) --s3rver $(S3RVER) --s3s-fs $(S3S_FS)

$(GNU_TIME):
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends time >/dev/null

## Type-check the whole crate for aarch64, where the portable scanner replaces the AVX2 one
## (rustup's aarch64 standard library and Debian's cross gcc for the C in -sys crates; its own
## target dir, as nothing of it is shared with the native build).
AARCH64_CC := /usr/bin/aarch64-linux-gnu-gcc
AARCH64_LIBC := /usr/aarch64-linux-gnu/include/stdio.h
check-aarch64: $(AARCH64_CC) $(AARCH64_LIBC)
	rustup target add aarch64-unknown-linux-gnu
	CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
		CARGO_TARGET_DIR=$(HOME)/.cache/dlqf-aarch64-target cargo check --target aarch64-unknown-linux-gnu --lib --bins --tests

# The cross C library's headers are only a recommendation of the compiler's package.
$(AARCH64_CC) $(AARCH64_LIBC) &:
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null

$(S3RVER):
	command -v npm >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }
	npm install --silent --no-audit --no-fund --prefix $(S3RVER_DIR) s3rver@3.7.1
