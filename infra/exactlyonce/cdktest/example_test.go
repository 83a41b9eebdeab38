package cdktest_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// TestStack is the package documentation's example, as a team's test of
// its own app: it synthesizes the stack and reads the consumer's function
// from the template. (It needs a *testing.T, which an Example has not.)
func TestStack(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code:   cdktest.Code(),
		Config: exactlyonce.Config{Key: "orderId"},
	})
	fn := cdktest.Synth(t, stack).One(t, "AWS::Lambda::Function", "Orders")
	if got := cdktest.Env(fn)[consumer.EnvKey]; got != "orderId" {
		t.Errorf("%s = %v, want orderId", consumer.EnvKey, got)
	}
}

// A team's app with cdk-nag's packs on its consumer (ConsumerProps.Nag)
// lists what they report; with the construct's defaults, nothing.
func ExampleNagFindings() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Shop"), nil)
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code:   cdktest.Code(),
		Config: exactlyonce.Config{Key: "orderId"},
		Nag:    true,
	})
	fmt.Println("cdk-nag findings:", len(cdktest.NagFindings(stack)))
	// Output: cdk-nag findings: 0
}
