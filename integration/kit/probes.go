package kit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDBCounter is a probe (App.Applied) for an effect that writes an
// item per key to a DynamoDB table and adds 1 to a number attribute of it,
// so that a double effect shows as 2. table is the stack output naming the
// table; the item's partition key is the attribute key (a string), the
// counter the attribute counter. A missing item or attribute counts 0.
// Reads are consistent.
func DynamoDBCounter(table, key, counter string) func(context.Context, Stack, []string) (map[string]int, error) {
	return func(ctx context.Context, s Stack, keys []string) (map[string]int, error) {
		name := s.Outputs[table]
		if name == "" {
			return nil, fmt.Errorf("kit: stack %s has no output %s", s.Name, table)
		}
		ddb, applied := dynamodb.NewFromConfig(s.AWS), make(map[string]int, len(keys))
		for _, k := range keys {
			out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(name), ConsistentRead: aws.Bool(true),
				Key:                      map[string]types.AttributeValue{key: &types.AttributeValueMemberS{Value: k}},
				ProjectionExpression:     aws.String("#c"),
				ExpressionAttributeNames: map[string]string{"#c": counter},
			})
			if err != nil {
				return nil, fmt.Errorf("kit: %s item %s: %w", name, k, err)
			}
			n, err := count(out.Item[counter])
			if err != nil {
				return nil, fmt.Errorf("kit: %s item %s: %s: %w", name, k, counter, err)
			}
			applied[k] = n
		}
		return applied, nil
	}
}

// count reads a counter attribute: absent is 0, otherwise a Number.
func count(v types.AttributeValue) (int, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case *types.AttributeValueMemberN:
		return strconv.Atoi(v.Value)
	}
	return 0, fmt.Errorf("%T, want a Number", v)
}
