"""Word lists for the benchmark corpus: engineering notes in English and Chinese.

Kept apart from `corpus.py` so the generator reads as an algorithm. The lists are
ordered roughly from common to uncommon; `corpus.py` turns that order into Zipf
ranks and grows a long tail of compound identifiers from them, because a real
8 MiB note collection has tens of thousands of word types, most seen only once
or twice, and rare-term queries are only meaningful against such a tail.

`ABSENT_EN` holds plausible search words that are deliberately kept out of every
list, so "terms that occur nowhere" are realistic words, not random strings.
"""

from __future__ import annotations


def _words(text: str) -> list[str]:
    return text.split()


def _lines(text: str, separator: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", " ").split(separator)]

EN_FUNCTION = _words("""
the to and a of in is for that it on with as this be we not are by or when from
at if but so an all can should was has have only do does then than which after
before into out up also more no one two new use used using via per about over
just still now each other any some most must may might will would could there
here what why how because while until again once very much same every first last
""")

EN_TECH = _words("""
cache config deploy test build release server client request response timeout
retry error log database query index schema migration branch commit merge review
pipeline container image cluster node service endpoint latency throughput memory
cpu disk file path directory socket token auth permission user session agent
model prompt tool hub runtime scope revision lock thread process signal queue
worker job schedule metric alert dashboard trace span debug flag feature rollout
rollback version dependency package wheel lockfile fixture mock assert coverage
lint format type module function class method interface struct field column row
table key value hash digest checksum payload header body json yaml toml markdown
http tls certificate proxy dns port host network bandwidth packet buffer stream
batch chunk page offset limit budget quota snapshot backup restore replica leader
follower partition shard eviction ttl stale fresh warm cold benchmark profile
regression bisect flaky race deadlock panic crash stacktrace leak heap stack
allocation pointer async await future callback event handler listener hook
plugin extension adapter launcher wrapper shim binary script shell terminal tty
environment variable secret credential password certificate rotation upgrade
downgrade patch hotfix incident postmortem runbook oncall pager escalation
owner team sprint ticket issue backlog estimate deadline milestone roadmap
decision tradeoff constraint requirement spec contract api cli flag option
argument default override fallback retry backoff jitter budget sampling
histogram percentile median p99 slo sla uptime outage degraded healthcheck
probe readiness liveness restart supervisor daemon systemd cron timer clock
timezone utc timestamp date duration interval deadline cancel abort cleanup
teardown setup bootstrap init install uninstall upgrade vendor fork upstream
downstream patchset changelog tag semver pin lock resolve conflict rebase squash
cherry revert bisect blame diff hunk staging production canary preview sandbox
tenant account billing invoice customer region zone availability failover
replication consistency durability fsync rename atomic transaction isolation
serializable snapshot vacuum autovacuum analyze explain planner optimizer join
aggregate filter sort limit cursor pagination encoding utf8 unicode ascii bytes
string integer float decimal boolean null optional nullable enum union tuple
list map set dict array vector matrix tensor gpu batch epoch checkpoint dataset
tokenizer embedding inference training evaluation metric accuracy recall
precision threshold ranking search snippet highlight excerpt summary context
window compaction resume history transcript memory note document entry topic
preference feedback project reference convention style naming layout folder
workspace repository monorepo submodule workflow action runner artifact cache
registry mirror proxy offline airgap firewall allowlist denylist sandbox jail
container seccomp capability privilege root sudo uid gid umask chmod chown
ownership mode symlink hardlink inode mount volume filesystem ext4 xfs btrfs
tmpfs overlay snapshot quota disk ssd nvme iops throughput queue depth
""")

EN_RARE = _words("""
idempotency quiescence linearizability tombstoning hysteresis monotonicity
backpressure thundering bikeshedding heisenbug yakshaving serializability
fencing lamport vectorclock bloomfilter cuckoo trie rope zipper memoization
trampolining defunctionalization unikernel landlock apparmor cgroup overlayfs
inotify fanotify epoll kqueue iouring splice sendfile mmap madvise hugepage
numa prefetch branchless simd neon wasm ebpf xdp quic protobuf flatbuffers
capnproto msgpack cbor bson avro parquet duckdb rocksdb leveldb lmdb etcd
zookeeper raft paxos gossip crdt merkle hyperloglog reservoir skiplist
treap fenwick bitmap roaring zstd brotli lz4 snappy deflate varint zigzag
endianness alignment padding torn fsyncgate writeback dirtypage journaling
copyonwrite reflink fallocate punchhole sparse preallocation coalescing
debouncing throttling hedging speculative quorum antientropy readrepair
hintedhandoff sloppy vnode consistenthashing rendezvous jumphash maglev
ketama anycast bgp ecmp mtu fragmentation nagle cork keepalive halfclose
slowloris tarpit honeypot canarytoken entropy nonce replay downgradeattack
timingattack sidechannel spectre meltdown rowhammer retpoline kaslr
""")

EN_HEADINGS = _lines("""
Context|Decision|Why|How to apply|Steps|Notes|Open questions|Follow-up|Background
|Symptoms|Root cause|Fix|Verification|Rollback plan|Risks|Alternatives considered
|Timeline|Impact|Lessons|Commands|Configuration|Known issues|References|Summary
""", "|")

ZH_FUNCTION = _words("""
的 了 是 在 和 把 要 不 也 就 都 会 有 对 用 从 到 这 那 我们 需要 可以 如果
因为 所以 但是 已经 没有 还是 或者 以及 然后 之后 之前 其中 通过 目前 只是
""")

ZH_TECH = _words("""
配置 缓存 服务 部署 数据库 接口 测试 问题 修复 性能 内存 日志 超时 重试 权限
用户 会话 版本 依赖 构建 发布 回滚 监控 告警 进程 线程 队列 任务 调度 索引 查询
迁移 分支 提交 合并 评审 流水线 容器 镜像 集群 节点 网关 负载 延迟 吞吐 磁盘
文件 路径 目录 套接字 令牌 认证 代理 证书 端口 网络 缓冲 批量 分页 偏移 预算
配额 快照 备份 恢复 副本 分片 压缩 淘汰 过期 基准 剖析 回归 竞态 死锁 崩溃
泄漏 堆栈 异步 回调 事件 钩子 插件 适配器 启动器 脚本 终端 环境变量 密钥 凭证
记忆 检索 搜索 摘要 提示词 模型 工具 上下文 智能体 会话恢复 约定 偏好 反馈
项目 参考 文档 主题 入口 目录结构 工作区 仓库 工作流 制品 镜像源 离线 防火墙
白名单 沙箱 权限位 挂载 文件系统 原子写入 事务 隔离级别 一致性 持久化 主从
故障转移 可用区 租户 账单 灰度 上线 下线 值班 复盘 排障 根因 验证 风险 方案
取舍 约束 需求 规范 契约 命令行 参数 默认值 兜底 退避 抖动 采样 直方图 分位数
中位数 可用性 降级 健康检查 探针 重启 守护进程 定时器 时区 时间戳 取消 清理
初始化 安装 升级 上游 下游 变更日志 标签 冲突 变基 差异 预发 生产环境 沙盒
""")

ZH_RARE = _words("""
幂等性 线性一致性 背压 惊群效应 墓碑标记 滞回 单调性 布隆过滤器 拜占庭 脑裂
雪崩效应 缓存击穿 熔断器 限流器 金丝雀发布 蓝绿部署 写放大 读放大 长尾延迟
零拷贝 页缓存 脏页回写 日志结构合并树 跳表 前缀树 倒排索引 向量时钟 租约
心跳检测 反熵 读修复 一致性哈希 虚拟节点 热点分片 冷启动 预热 逃逸分析
尾递归 协程 信号量 自旋锁 读写锁 乐观锁 悲观锁 内存屏障 伪共享 缓存行
""")

ZH_HEADINGS = _words("""
背景 决策 原因 如何应用 步骤 备注 待定问题 后续 现象 根因 修复 验证 回滚方案
风险 备选方案 时间线 影响 经验 命令 配置说明 已知问题 参考资料 总结
""")

ABSENT_EN = _words("""
kubernetes terraform graphql webauthn kafka cassandra elasticsearch prometheus
grafana jaeger zipkin envoy istio linkerd consul vault nomad ansible puppet chef
saltstack jenkins bazel buck pants gradle maven sbt cargo rustup nixos guix
flatpak snapcraft homebrew chocolatey scoop winget powershell cygwin msys
mingw clang gcc llvm valgrind helgrind cachegrind callgrind perfetto tracy
superluminal vtune uprof instruments dtrace systemtap bpftrace sysdig falco
""")

ABSENT_ZH = _words("""
量子纠缠 区块链共识 联邦学习 知识蒸馏 图神经网络 强化学习 蛋白质折叠 光刻机
超导体 核聚变 引力波 暗物质 黑洞辐射 弦理论 拓扑绝缘体 石墨烯 钙钛矿 固态电池
""")

PROJECT_OWNERS = _words("""
acme infra platform payments search mobile data ml billing identity growth
""")
