# Conveniences; scripts/test.sh is the test command CI runs.
.PHONY: test build info
test:
	./scripts/test.sh
build:
	go build ./...
info:
	go run ./cmd/fi_info -v
