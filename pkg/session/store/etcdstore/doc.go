// Package etcdstore opens a store on an etcd cluster named by its URL,
// etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?PARAMS] (etcdkv.ParseURL): the
// etcd engine under the store's logic, without a directory or a lock.
// It stands apart from both so that what opens only directories (the
// commands, through the resident store process) links no etcd store.
//
// It imports the store's logic (kvstore) and etcdkv, and nothing of the
// commands.
package etcdstore
