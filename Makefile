# Conveniences; scripts/test.sh is the test command CI runs.
.PHONY: test build info pingpong bench-compare
test:
	./scripts/test.sh
build:
	go build ./...
info:
	go run ./cmd/fi_info -v
pingpong:  # make pingpong ARGS="-S all -c"
	./scripts/pingpong.sh $(ARGS)
bench-compare:  # make bench-compare ARGS="-s 64,4096,65536,1048576"
	./scripts/bench-compare.sh $(ARGS)
