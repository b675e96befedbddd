package render

import (
	"encoding/json"
	"fmt"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

// ColonyClusterRequest builds the request that renders one Colony entry with
// the colony-cluster bundle (or any bundle the entry selects): Purpose is
// PurposeColonyCluster, ReleaseName the ClusterDeployment's name, Namespace
// the Colony's, Values the entry's values, and Input is
//
//	colony:                {name, namespace, uid, labels}
//	cluster:               the ColonyCluster entry as JSON (clusterName,
//	                       clusterDeploymentSpec, clusterLabels,
//	                       clusterAnnotations, bundle, values)
//	clusterDeploymentName: clusterDeploymentName
//	operator:              operator (the manager's settings, e.g. deliveryMode)
func ColonyClusterRequest(colony *infrav1.Colony, cluster *infrav1.ColonyCluster, clusterDeploymentName string, operator map[string]any) (Request, error) {
	entry, err := toMap(cluster)
	if err != nil {
		return Request{}, fmt.Errorf("encoding cluster %q of Colony %s/%s: %w", cluster.ClusterName, colony.Namespace, colony.Name, err)
	}
	labels := map[string]any{}
	for k, v := range colony.Labels {
		labels[k] = v
	}
	if operator == nil {
		operator = map[string]any{}
	}
	var values map[string]any
	if cluster.Values != nil && len(cluster.Values.Raw) > 0 {
		if err := json.Unmarshal(cluster.Values.Raw, &values); err != nil {
			return Request{}, fmt.Errorf("values of cluster %q of Colony %s/%s must be an object: %w",
				cluster.ClusterName, colony.Namespace, colony.Name, err)
		}
	}
	return Request{
		Purpose:     PurposeColonyCluster,
		ReleaseName: clusterDeploymentName,
		Namespace:   colony.Namespace,
		Values:      values,
		Input: map[string]any{
			"colony": map[string]any{
				"name":      colony.Name,
				"namespace": colony.Namespace,
				"uid":       string(colony.UID),
				"labels":    labels,
			},
			"cluster":               entry,
			"clusterDeploymentName": clusterDeploymentName,
			"operator":              operator,
		},
	}, nil
}

func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
