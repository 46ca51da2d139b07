"""``new_subgroups`` and ``new_subgroups_by_enumeration``: many disjoint groups in one call,
each made by ``new_group`` (so every rank makes every group, in the same order)."""

from __future__ import annotations

from ._world import get_process_group_ranks, get_rank, get_world_size, new_group


def new_subgroups(
    group_size: int | None = None,
    group=None,
    timeout=None,
    backend=None,
    pg_options=None,
    group_desc=None,
):
    """Split ``group`` (default: the world) into consecutive subgroups of ``group_size`` ranks.

    Args:
        group_size: ranks per subgroup; must divide the group's size. None: the number of
            CUDA devices (an error without CUDA).
        group: the group to split.
        timeout, backend, pg_options, group_desc: passed to ``new_group`` for each subgroup.

    Returns:
        ``(cur_subgroup, subgroups)``: this rank's subgroup and all of them, in rank order.

    Example:
        >>> cur, subgroups = dist.new_subgroups(2)    # 4 ranks: [0, 1] and [2, 3]
        >>> dist.all_reduce(t, group=cur)
    """
    if group_size is None:
        import ember

        if not ember.cuda.is_available():
            raise ValueError(
                "Default group size only takes effect when CUDA is available.If your subgroup "
                "using a backend that does not depend on CUDA,please pass in 'group_size' "
                "correctly."
            )
        group_size = ember.cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(
            f"The arg 'group_size' ({group_size}) must not exceed the world size ({world_size})"
        )
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group)
    ranks_per_subgroup_list = [ranks[i : i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(
        ranks_per_subgroup_list,
        timeout=timeout,
        backend=backend,
        pg_options=pg_options,
        group_desc=group_desc,
    )


def new_subgroups_by_enumeration(
    ranks_per_subgroup_list,
    timeout=None,
    backend=None,
    pg_options=None,
    group_desc=None,
):
    """One subgroup per list of world ranks in ``ranks_per_subgroup_list``; no rank may be in
    two. Ranks in none get ``cur_subgroup`` None.

    Returns:
        ``(cur_subgroup, subgroups)``: this rank's subgroup and all of them, in list order
        (``GroupMember.NON_GROUP_MEMBER`` for those this rank is not in).

    Example:
        >>> cur, subgroups = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]])
    """
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups = []
    cur_subgroup = None
    owner: dict[int, list] = {}  # rank -> the subgroup it is in, to refuse overlaps
    my_rank = get_rank()
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(
            ranks=ranks, timeout=timeout, backend=backend, pg_options=pg_options,
            group_desc=group_desc,
        )  # fmt: skip
        subgroups.append(subgroup)
        for rank in ranks:
            if rank in owner:
                raise ValueError(
                    f"Rank {rank} has appeared in both subgroup {owner[rank]} and {ranks}"
                )
            owner[rank] = ranks
            if rank == my_rank:
                cur_subgroup = subgroup
    return cur_subgroup, subgroups
