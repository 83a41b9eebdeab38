package consumer

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManagerAPI is the part of the Secrets Manager client
// Runtime.Secret calls: *secretsmanager.Client, or a fake in a test.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, params *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsManagerAPI = (*secretsmanager.Client)(nil)

// Secret is the string value of the secret whose ARN the variable name
// holds: the construct's ConsumerProps.Secrets sets that variable and lets
// the function read that secret, so that an API token never sits in the
// function's configuration, only where it points. Call it in Setup, once
// per instance: a rotated secret reaches the instances started after the
// rotation.
//
// Like Env's methods, Secret records a problem in rt.Env instead of
// returning it, named by the variable: unset, a secret that cannot be read
// (missing, access denied, the network) or that holds no string. Start
// reports it with every other problem at init, and the instance does not
// start; Secret then returns "". The value is never part of a problem.
//
// It reads with rt.SecretsManager, or a client of rt.AWS when that is nil.
func (rt *Runtime) Secret(ctx context.Context, name string) string {
	arn := rt.Env.Required(name)
	if arn == "" {
		return ""
	}
	client := rt.SecretsManager
	if client == nil {
		client = secretsmanager.NewFromConfig(rt.AWS)
	}
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	switch {
	case err != nil:
		rt.Env.Fail(name, "secret %s: %v", arn, err)
	case out.SecretString == nil:
		rt.Env.Fail(name, "secret %s holds no string (a binary secret?)", arn)
	case *out.SecretString == "":
		rt.Env.Fail(name, "secret %s is empty", arn)
	default:
		return *out.SecretString
	}
	return ""
}
