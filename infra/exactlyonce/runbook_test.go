package exactlyonce_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
)

// runbook is the operator runbook every alarm description links to by
// default (DefaultRunbookURL is its address on GitHub).
const runbook = "../../cmd/idemctl/RUNBOOK.md"

// TestRunbookCoversAlarms: the runbook has a "## <alarm id>" section for
// every alarm the construct creates, and none for an alarm it does not.
// GitHub's anchor of such a heading is the id in lower case, which
// RunbookSection links to; that holds for ids of letters and digits only.
func TestRunbookCoversAlarms(t *testing.T) {
	f, err := os.Open(runbook)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile(`^##\s+(Alarm\S*)\s*$`)
	var sections []string
	lines := bufio.NewScanner(f)
	inFence := false
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := heading.FindStringSubmatch(line); m != nil && !inFence {
			sections = append(sections, m[1])
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}

	c, _ := synthConsumer(t, exactlyonce.ConsumerProps{})
	var alarms []string
	plain := regexp.MustCompile(`^[A-Za-z0-9]+$`)
	for _, a := range c.Alarms {
		id := *a.Node().Id()
		alarms = append(alarms, id)
		if !plain.MatchString(id) {
			t.Errorf("alarm id %q: GitHub's anchor of its heading is not simply the id in lower case", id)
		}
		if !slices.Contains(sections, id) {
			t.Errorf("the construct creates %s, but %s has no \"## %s\" section (%s links to it)", id, runbook, id, c.Config.RunbookSection(id))
		}
	}
	for _, s := range sections {
		if !slices.Contains(alarms, s) {
			t.Errorf("%s has a section \"## %s\", but the construct creates no such alarm (it creates %v)", runbook, s, alarms)
		}
	}
	if len(alarms) == 0 {
		t.Error("no alarms")
	}
}
