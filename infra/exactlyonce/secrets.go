package exactlyonce

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// checkSecrets refuses a secret the function could not tell apart: no
// name, no secret, the name of a variable the runtime reads (none of them
// takes an ARN), or one Environment sets too.
func checkSecrets(props *ConsumerProps) error {
	var errs []error
	names := slices.Sorted(maps.Keys(props.Secrets))
	for _, name := range names {
		switch {
		case strings.TrimSpace(name) == "":
			errs = append(errs, errors.New("props.Secrets: a secret without a variable name"))
		case props.Secrets[name] == nil:
			errs = append(errs, fmt.Errorf("props.Secrets[%q] is nil", name))
		}
	}
	if clash := overlap(props.Secrets, consumer.Variables()); len(clash) > 0 {
		errs = append(errs, fmt.Errorf("props.Secrets must not set %s: the runtime reads them", strings.Join(clash, ", ")))
	}
	if clash := overlap(props.Secrets, slices.Collect(maps.Keys(props.Environment))); len(clash) > 0 {
		errs = append(errs, fmt.Errorf("props.Secrets and props.Environment both set %s", strings.Join(clash, ", ")))
	}
	return errors.Join(errs...)
}
