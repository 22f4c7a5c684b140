/**
 * The class operators name in {@code dfs.datanode.plugins}, which starts a
 * DataNode's side of the UCX path. Like every package of this project, it
 * uses only the packages DESIGN.md section 0 places below it
 * ({@code TestLayers} holds that order).
 */
package org.hdfsrdma.hadoop;
