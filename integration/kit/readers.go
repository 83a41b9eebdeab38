package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// readers lists, by metric, what of the deployed stack reads this
// consumer's metrics (consumer.MetricNamespace with its FunctionName and
// Namespace): the dashboards' graphs (from the deployed template:
// LocalStack keeps no dashboards) and the alarms (as CloudWatch holds
// them). A stack with several consumers graphs and alarms on each: what
// names another consumer is that consumer's, not this one's business. It
// fails when no dashboard graphs this consumer, or no alarm watches it.
func (r *run) readers(ctx context.Context) (map[string][]string, error) {
	read := map[string][]string{}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(r.st.template), &tpl); err != nil {
		return nil, fmt.Errorf("the deployed template: %w", err)
	}
	var alarms []string
	for logical, res := range tpl.Resources {
		switch res.Type {
		case "AWS::CloudWatch::Alarm":
			alarms = append(alarms, r.st.physical[logical])
		case "AWS::CloudWatch::Dashboard":
			body, err := r.st.resolve(res.Properties["DashboardBody"])
			if err != nil {
				return nil, fmt.Errorf("dashboard %s: %w", logical, err)
			}
			names, err := dashboardMetrics(body, r.st.Function, r.st.Namespace)
			if err != nil {
				return nil, fmt.Errorf("dashboard %s: %w", logical, err)
			}
			for _, name := range names {
				read[name] = append(read[name], "dashboard "+logical)
			}
		}
	}
	if len(read) == 0 {
		return nil, fmt.Errorf("no dashboard of stack %s graphs a %s metric of this consumer (%s %s, %s %s)",
			r.st.Name, consumer.MetricNamespace, consumer.DimensionFunctionName, r.st.Function, consumer.DimensionNamespace, r.st.Namespace)
	}
	if len(alarms) == 0 {
		return nil, fmt.Errorf("stack %s has no alarm: none watches this consumer's %s metrics", r.st.Name, consumer.MetricNamespace)
	}
	out, err := r.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: alarms})
	if err != nil || len(out.MetricAlarms) != len(alarms) {
		return nil, fmt.Errorf("the stack's %d alarms: %d found, %v", len(alarms), len(out.MetricAlarms), err)
	}
	mine := 0
	for _, a := range out.MetricAlarms {
		dims := map[string]string{}
		for _, d := range a.Dimensions {
			dims[aws.ToString(d.Name)] = aws.ToString(d.Value)
		}
		if !ofConsumer(aws.ToString(a.Namespace), dims, r.st.Function, r.st.Namespace) {
			continue
		}
		mine++
		name := aws.ToString(a.MetricName)
		read[name] = append(read[name], "alarm "+aws.ToString(a.AlarmName))
	}
	if mine == 0 {
		return nil, fmt.Errorf("none of the stack's %d alarms watches a %s metric of this consumer (%s %s, %s %s)",
			len(alarms), consumer.MetricNamespace, consumer.DimensionFunctionName, r.st.Function, consumer.DimensionNamespace, r.st.Namespace)
	}
	return read, nil
}

// ofConsumer reports whether a metric of namespace ns with dimensions
// dims is one of the consumer's (function, namespace).
func ofConsumer(ns string, dims map[string]string, function, namespace string) bool {
	return ns == consumer.MetricNamespace && dims[consumer.DimensionFunctionName] == function && dims[consumer.DimensionNamespace] == namespace
}

// dashboardMetrics lists the metrics a dashboard body graphs of the
// consumer (function, namespace); others' graphs are left out.
func dashboardMetrics(body, function, namespace string) ([]string, error) {
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		return nil, fmt.Errorf("dashboard body: %w", err)
	}
	var names []string
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			// [namespace, name, dimension, value, ..., {options}]
			if len(m) < 2 {
				continue
			}
			dims := map[string]string{}
			for i := 2; i+1 < len(m); i += 2 {
				k, _ := m[i].(string)
				v, _ := m[i+1].(string)
				dims[k] = v
			}
			if ns, _ := m[0].(string); ofConsumer(ns, dims, function, namespace) {
				names = append(names, fmt.Sprint(m[1]))
			}
		}
	}
	return names, nil
}

// resolve evaluates the intrinsic functions a CDK dashboard body holds:
// Fn::Join, Ref (a resource of the stack or a pseudo parameter) and
// Fn::GetAtt (left as a placeholder: alarm ARNs).
func (s Stack) resolve(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			region := s.AWS.Region
			if region == "" {
				region = "us-east-1"
			}
			pseudo := map[string]string{"AWS::Region": region, "AWS::AccountId": "000000000000", "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
			if p, ok := pseudo[ref]; ok {
				return p, nil
			}
			if p, ok := s.physical[ref]; ok {
				return p, nil
			}
			return "", fmt.Errorf("ref %s: no such resource", ref)
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok {
			return fmt.Sprintf("%v", att), nil
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			var out []string
			for _, p := range parts {
				r, err := s.resolve(p)
				if err != nil {
					return "", err
				}
				out = append(out, r)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v", v)
}
