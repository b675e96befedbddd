package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	shardInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "shard_info",
		Help: "Always 1 while sharding is on; the labels give this replica's shard index and the number of shards it was configured with.",
	}, []string{"shard", "shards"})
	shardUnits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "shard_units_held",
		Help: "Units of work (Colonies and ClusterDeployments no Colony renders) this shard holds and acts on.",
	}, []string{"shard"})
)

// SetShardInfo records this replica's shard and the number of shards.
func SetShardInfo(index, shards int) {
	shardInfo.Reset()
	shardInfo.WithLabelValues(strconv.Itoa(index), strconv.Itoa(shards)).Set(1)
}

// SetShardUnitsHeld records how many units shard index holds.
func SetShardUnitsHeld(index, n int) {
	shardUnits.WithLabelValues(strconv.Itoa(index)).Set(float64(n))
}
