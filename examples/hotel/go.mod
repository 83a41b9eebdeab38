module example.com/hotel

go 1.26

require (
	github.com/aws/aws-cdk-go/awscdk/v2 v2.270.0
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.47.8
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue v1.21.19
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression v1.10.7
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.73.1
	github.com/aws/jsii-runtime-go v1.140.0
	github.com/exactlyonce/sqsidem/infra/exactlyonce v0.3.0
	github.com/exactlyonce/sqsidem/integration/kit v0.3.0
	github.com/exactlyonce/sqsidem/pkg/idem v0.3.0
	github.com/exactlyonce/sqsidem/pkg/idem/consumer v0.3.0
)

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream v1.7.26 // indirect
	github.com/aws/aws-sdk-go-v2/config v1.33.15 // indirect
	github.com/aws/aws-sdk-go-v2/credentials v1.20.15 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.7 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.11 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.11 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/cloudformation v1.82.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/cloudwatch v1.75.5 // indirect
	github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs v1.92.0 // indirect
	github.com/aws/aws-sdk-go-v2/service/dynamodbstreams v1.46.6 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.24 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/lambda v1.114.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/secretsmanager v1.50.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.12.3 // indirect
	github.com/aws/aws-sdk-go-v2/service/sqs v1.52.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.3 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.3 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.51.8 // indirect
	github.com/aws/constructs-go/constructs/v10 v10.6.0 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/cdklabs/awscdk-asset-awscli-go/awscliv1/v2 v2.2.292 // indirect
	github.com/cdklabs/awscdk-asset-node-proxy-agent-go/nodeproxyagentv6/v2 v2.1.2 // indirect
	github.com/cdklabs/cdk-nag-go/cdknag/v2 v2.38.2 // indirect
	github.com/cdklabs/cloud-assembly-schema-go/awscdkcloudassemblyschema/v54 v54.11.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/exactlyonce/sqsidem/pkg/idem/dynamostore v0.3.0 // indirect
	github.com/exactlyonce/sqsidem/pkg/idem/redisstore v0.3.0 // indirect
	github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch v0.3.0 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/yuin/goldmark v1.7.16 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/lint v0.0.0-20241112194109-818c5a804067 // indirect
	golang.org/x/mod v0.39.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/telemetry v0.0.0-20260811182544-a038080d80e5 // indirect
	golang.org/x/tools v0.49.0 // indirect
	golang.org/x/tools/cmd/godoc v0.1.0-deprecated // indirect
	golang.org/x/tools/godoc v0.1.0-deprecated // indirect
)

// The example builds against the repository it lives in: every module of
// sqsidem the graph may name, from the working tree. A copy outside the
// repository drops these lines and requires released versions.
replace (
	github.com/exactlyonce/sqsidem/infra/exactlyonce => ../../infra/exactlyonce
	github.com/exactlyonce/sqsidem/integration/kit => ../../integration/kit
	github.com/exactlyonce/sqsidem/pkg/idem => ../../pkg/idem
	github.com/exactlyonce/sqsidem/pkg/idem/consumer => ../../pkg/idem/consumer
	github.com/exactlyonce/sqsidem/pkg/idem/dynamostore => ../../pkg/idem/dynamostore
	github.com/exactlyonce/sqsidem/pkg/idem/redisstore => ../../pkg/idem/redisstore
	github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch => ../../pkg/idem/sqsbatch
)

tool github.com/exactlyonce/sqsidem/integration/kit/cmd/onlocalstack
