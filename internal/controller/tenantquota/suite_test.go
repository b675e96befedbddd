package tenantquota_test

import (
	"testing"

	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

func TestMain(m *testing.M) { controllertest.Main(m) }
