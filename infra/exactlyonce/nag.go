package exactlyonce

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// applyNag adds cdk-nag's AwsSolutions and Serverless packs to scope and
// everything under it (ConsumerProps.Nag). Their findings are annotations:
// errors and warnings that the CDK CLI prints at synth, and that
// assertions.Annotations finds in a test.
func applyNag(scope constructs.IConstruct) {
	for _, pack := range []awscdk.IAspect{
		cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}),
		cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}),
	} {
		awscdk.Aspects_Of(scope).Add(pack, nil)
	}
}
