"""Rank program (4 ranks): new_subgroups and new_subgroups_by_enumeration, then objects sent
with send_object_list over the world and over a subgroup. Each all-reduce sums 2**rank, so its
result names the ranks that took part; each rank saves what it saw to ``<out>/rank<r>.json``."""

from __future__ import annotations

import json
import sys

import ember
import ember.distributed as dist

dist.init_process_group("mpi")
RANK = dist.get_rank()
SEEN: dict = {"local_rank": dist.get_node_local_rank(fallback_rank=-7)}

# The world's first operation a send/recv between two ranks only (it waited for the other
# ranks' part in making the world's communicator until init made it)
first = ember.tensor([10.0 * RANK])
if RANK == 1:
    dist.send(first, dst=2)
elif RANK == 2:
    dist.recv(first, src=1)
SEEN["first_p2p"] = first.item()


def members(group) -> int:
    """The bit mask of the ranks of ``group``, found by an all-reduce over it."""
    if group == dist.GroupMember.NON_GROUP_MEMBER:
        return -1
    t = ember.tensor([2**RANK], dtype=ember.int64)
    dist.all_reduce(t, group=group)
    return int(t.item())


cur, subgroups = dist.new_subgroups(2)
SEEN["halves"] = {"cur": members(cur), "all": [members(g) for g in subgroups]}
cur, subgroups = dist.new_subgroups_by_enumeration([[0, 3], [1, 2]])
SEEN["pairs"] = {"cur": members(cur), "all": [members(g) for g in subgroups]}
SEEN["pg_count"] = dist.get_pg_count()

objects = [{"from": RANK, "big": "x" * 5000}, (1, 2.5, None), "ü"]
if RANK == 0:
    dist.send_object_list(objects, dst=3)
elif RANK == 3:
    received = [None, None, None]
    SEEN["world_sender"] = dist.recv_object_list(received)  # from any rank
    SEEN["world_objects"] = [received[0]["from"], len(received[0]["big"]), received[1:]]
if RANK == 1:
    dist.send_object_list(objects[2:], group=cur, group_dst=1)
elif RANK == 2:
    received = [None]
    SEEN["group_sender"] = dist.recv_object_list(received, group=cur, group_src=0)
    SEEN["group_objects"] = received
with open(f"{sys.argv[1]}/rank{RANK}.json", "w") as f:
    json.dump(SEEN, f)
