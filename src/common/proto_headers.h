/* The HTTP response headers of s3rdma's own that both s3rdmad (src/http)
 * and libs3rdma (src/client) name (docs/protocol.md §1). Here, in common,
 * so neither side links a transport module for a string. */
#ifndef S3R_COMMON_PROTO_HEADERS_H
#define S3R_COMMON_PROTO_HEADERS_H

/* The header in which s3rdmad names its session endpoint ("host:port",
 * "[v6]:port") to authenticated clients. */
#define RDMA_ENDPOINT_HEADER "x-s3rdma-rdma-endpoint"
/* The header in which s3rdmad names the other gateways of its cluster
 * ("http://h1:9000,https://h2:9443": its `peers` setting) to authenticated
 * clients, which add them to their endpoint list. */
#define PEERS_HEADER "x-s3rdma-peers"

#endif
