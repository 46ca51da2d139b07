"""The hparams plugin's three summaries (experiment, session start, session end), as
``torch.utils.tensorboard.summary.hparams`` writes them."""

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams.api_pb2 import (
    DataType,
    Experiment,
    HParamInfo,
    MetricInfo,
    MetricName,
    Status,
)
from tensorboard.plugins.hparams.plugin_data_pb2 import (
    HParamsPluginData,
    SessionEndInfo,
    SessionStartInfo,
)

from ._convert import make_np

# (Python types, protobuf Value field, hparams DataType), tried in PyTorch's order: bool is an
# int, so a bool hparam is logged as a number there too
_KINDS = (
    ((int, float), "number_value", "DATA_TYPE_FLOAT64"),
    ((str,), "string_value", "DATA_TYPE_STRING"),
    ((bool,), "bool_value", "DATA_TYPE_BOOL"),
)


def _check(hparam_dict, metric_dict, hparam_domain_discrete):
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if (
            k not in hparam_dict
            or not isinstance(v, list)
            or not all(isinstance(d, type(hparam_dict[k])) for d in v)
        ):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                f"hparam_dict[{k}]."
            )


def _hparam_info(ssi, key, value, discrete):
    import ember

    if isinstance(value, ember.Tensor):
        ssi.hparams[key].number_value = make_np(value)[0]
        return HParamInfo(name=key, type=DataType.Value("DATA_TYPE_FLOAT64"))
    for types, field, data_type in _KINDS:
        if isinstance(value, types):
            setattr(ssi.hparams[key], field, value)
            domain = None
            if discrete is not None:
                domain = struct_pb2.ListValue(
                    values=[struct_pb2.Value(**{field: d}) for d in discrete]
                )
            return HParamInfo(name=key, type=DataType.Value(data_type), domain_discrete=domain)
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def _plugin_summary(tag, **content):
    data = HParamsPluginData(version=hp_metadata.PLUGIN_DATA_VERSION, **content)
    plugin_data = SummaryMetadata.PluginData(
        plugin_name=hp_metadata.PLUGIN_NAME, content=data.SerializeToString()
    )
    metadata = SummaryMetadata(plugin_data=plugin_data)
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The ``(experiment, session_start_info, session_end_info)`` Summaries of one run.

    Args:
        hparam_dict: hyperparameter names to values (bool, str, int, float, a one-element tensor;
            None values are skipped).
        metric_dict: metric names to values (only the names are recorded here).
        hparam_domain_discrete: hyperparameter names to the list of values each can take.
    """
    hparam_domain_discrete = hparam_domain_discrete or {}
    _check(hparam_dict, metric_dict, hparam_domain_discrete)
    ssi = SessionStartInfo()
    infos = [
        _hparam_info(ssi, k, v, hparam_domain_discrete.get(k))
        for k, v in hparam_dict.items()
        if v is not None
    ]
    metrics = [MetricInfo(name=MetricName(tag=k)) for k in metric_dict]
    experiment = Experiment(hparam_infos=infos, metric_infos=metrics)
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (
        _plugin_summary(hp_metadata.EXPERIMENT_TAG, experiment=experiment),
        _plugin_summary(hp_metadata.SESSION_START_INFO_TAG, session_start_info=ssi),
        _plugin_summary(hp_metadata.SESSION_END_INFO_TAG, session_end_info=end),
    )
