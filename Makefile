# Top-level entry points. CMake does the real work underneath, in build/.
#   make          build everything into build/
#   make run      install deps if missing, build, start s3rdmad on 127.0.0.1:9000 with ./data
#   make test     install deps if missing, build, run every test (unit + integration),
#                 then the same suite on an ASan+UBSan build (build-asan/)
#   make install  build, then install under PREFIX (default /usr/local), below
#                 DESTDIR if given: binaries, libs3rdma, s3rdma.h, pkg-config file,
#                 sample config, man pages, systemd unit, bash completion
#                 (docs/deploy.md)
BUILD      ?= build
ASAN_BUILD ?= build-asan
PYTHON     ?= /usr/bin/python3
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build run test test-unit test-integration asan test-asan install format clean

all: build

deps:
	@./scripts/install-deps

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json

run: deps build
	./scripts/run-server

test: deps
	./scripts/run-tests

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DS3R_SANITIZE=ON -DS3R_WERROR=ON $(CMAKE_FLAGS)

asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

format:
	clang-format -i $$(find src include tests -name '*.[ch]')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) compile_commands.json
