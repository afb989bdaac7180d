// Package etcdtest gives tests an etcd cluster: the shared one whose
// endpoints are in WC_TEST_ETCD (scripts/etcd-cluster.sh starts it; .ci/run
// does so before the tests), with an engine on a prefix of each test's
// own, and clusters of a test's own to kill, stop and restart
// (StartCluster). Without etcd the tests skip, saying why, and fail when
// CI=true. Only tests import it.
package etcdtest
