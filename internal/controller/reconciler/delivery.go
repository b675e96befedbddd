package reconciler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// RecordApply records what a sink's Apply returned on an owner's delivery
// status: the inventory it now holds, the commit that holds it, and the
// time something changed. A nil result records nothing.
func RecordApply(d *commonv1.DeliveryStatus, res *delivery.Result) {
	if res == nil {
		return
	}
	d.Inventory = res.Inventory
	if res.Revision != "" {
		d.Revision = res.Revision
	}
	if len(res.Changed) > 0 {
		now := metav1.Now()
		d.LastDeliveredTime = &now
	}
}
