from google.protobuf import any_pb2 as _any_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VectorMetricType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    L2: _ClassVar[VectorMetricType]
    Cosine: _ClassVar[VectorMetricType]
    Dot: _ClassVar[VectorMetricType]
    Hamming: _ClassVar[VectorMetricType]
L2: VectorMetricType
Cosine: VectorMetricType
Dot: VectorMetricType
Hamming: VectorMetricType

class UUID(_message.Message):
    __slots__ = ("uuid",)
    UUID_FIELD_NUMBER: _ClassVar[int]
    uuid: bytes
    def __init__(self, uuid: _Optional[bytes] = ...) -> None: ...

class IndexFile(_message.Message):
    __slots__ = ("path", "size_bytes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    path: str
    size_bytes: int
    def __init__(self, path: _Optional[str] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class IndexMetadata(_message.Message):
    __slots__ = ("uuid", "fields", "name", "dataset_version", "fragment_bitmap", "index_details", "index_version", "created_at", "base_id", "files")
    UUID_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    FRAGMENT_BITMAP_FIELD_NUMBER: _ClassVar[int]
    INDEX_DETAILS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    BASE_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    uuid: UUID
    fields: _containers.RepeatedScalarFieldContainer[int]
    name: str
    dataset_version: int
    fragment_bitmap: bytes
    index_details: _any_pb2.Any
    index_version: int
    created_at: int
    base_id: int
    files: _containers.RepeatedCompositeFieldContainer[IndexFile]
    def __init__(self, uuid: _Optional[_Union[UUID, _Mapping]] = ..., fields: _Optional[_Iterable[int]] = ..., name: _Optional[str] = ..., dataset_version: _Optional[int] = ..., fragment_bitmap: _Optional[bytes] = ..., index_details: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., index_version: _Optional[int] = ..., created_at: _Optional[int] = ..., base_id: _Optional[int] = ..., files: _Optional[_Iterable[_Union[IndexFile, _Mapping]]] = ...) -> None: ...

class IndexSection(_message.Message):
    __slots__ = ("indices",)
    INDICES_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedCompositeFieldContainer[IndexMetadata]
    def __init__(self, indices: _Optional[_Iterable[_Union[IndexMetadata, _Mapping]]] = ...) -> None: ...

class FragmentReuseIndexDetails(_message.Message):
    __slots__ = ("inline",)
    class InlineContent(_message.Message):
        __slots__ = ("versions",)
        VERSIONS_FIELD_NUMBER: _ClassVar[int]
        versions: _containers.RepeatedCompositeFieldContainer[FragmentReuseIndexDetails.Version]
        def __init__(self, versions: _Optional[_Iterable[_Union[FragmentReuseIndexDetails.Version, _Mapping]]] = ...) -> None: ...
    class FragmentDigest(_message.Message):
        __slots__ = ("id", "physical_rows", "num_deleted_rows")
        ID_FIELD_NUMBER: _ClassVar[int]
        PHYSICAL_ROWS_FIELD_NUMBER: _ClassVar[int]
        NUM_DELETED_ROWS_FIELD_NUMBER: _ClassVar[int]
        id: int
        physical_rows: int
        num_deleted_rows: int
        def __init__(self, id: _Optional[int] = ..., physical_rows: _Optional[int] = ..., num_deleted_rows: _Optional[int] = ...) -> None: ...
    class Group(_message.Message):
        __slots__ = ("changed_row_addrs", "old_fragments", "new_fragments")
        CHANGED_ROW_ADDRS_FIELD_NUMBER: _ClassVar[int]
        OLD_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        NEW_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        changed_row_addrs: bytes
        old_fragments: _containers.RepeatedCompositeFieldContainer[FragmentReuseIndexDetails.FragmentDigest]
        new_fragments: _containers.RepeatedCompositeFieldContainer[FragmentReuseIndexDetails.FragmentDigest]
        def __init__(self, changed_row_addrs: _Optional[bytes] = ..., old_fragments: _Optional[_Iterable[_Union[FragmentReuseIndexDetails.FragmentDigest, _Mapping]]] = ..., new_fragments: _Optional[_Iterable[_Union[FragmentReuseIndexDetails.FragmentDigest, _Mapping]]] = ...) -> None: ...
    class Version(_message.Message):
        __slots__ = ("dataset_version", "groups")
        DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
        GROUPS_FIELD_NUMBER: _ClassVar[int]
        dataset_version: int
        groups: _containers.RepeatedCompositeFieldContainer[FragmentReuseIndexDetails.Group]
        def __init__(self, dataset_version: _Optional[int] = ..., groups: _Optional[_Iterable[_Union[FragmentReuseIndexDetails.Group, _Mapping]]] = ...) -> None: ...
    INLINE_FIELD_NUMBER: _ClassVar[int]
    inline: FragmentReuseIndexDetails.InlineContent
    def __init__(self, inline: _Optional[_Union[FragmentReuseIndexDetails.InlineContent, _Mapping]] = ...) -> None: ...

class Tensor(_message.Message):
    __slots__ = ("data_type", "shape", "data")
    class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BFLOAT16: _ClassVar[Tensor.DataType]
        FLOAT16: _ClassVar[Tensor.DataType]
        FLOAT32: _ClassVar[Tensor.DataType]
        FLOAT64: _ClassVar[Tensor.DataType]
        UINT8: _ClassVar[Tensor.DataType]
        UINT16: _ClassVar[Tensor.DataType]
        UINT32: _ClassVar[Tensor.DataType]
        UINT64: _ClassVar[Tensor.DataType]
    BFLOAT16: Tensor.DataType
    FLOAT16: Tensor.DataType
    FLOAT32: Tensor.DataType
    FLOAT64: Tensor.DataType
    UINT8: Tensor.DataType
    UINT16: Tensor.DataType
    UINT32: Tensor.DataType
    UINT64: Tensor.DataType
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    data_type: Tensor.DataType
    shape: _containers.RepeatedScalarFieldContainer[int]
    data: bytes
    def __init__(self, data_type: _Optional[_Union[Tensor.DataType, str]] = ..., shape: _Optional[_Iterable[int]] = ..., data: _Optional[bytes] = ...) -> None: ...

class IVF(_message.Message):
    __slots__ = ("centroids", "offsets", "lengths", "centroids_tensor", "loss")
    CENTROIDS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    LENGTHS_FIELD_NUMBER: _ClassVar[int]
    CENTROIDS_TENSOR_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    centroids: _containers.RepeatedScalarFieldContainer[float]
    offsets: _containers.RepeatedScalarFieldContainer[int]
    lengths: _containers.RepeatedScalarFieldContainer[int]
    centroids_tensor: Tensor
    loss: float
    def __init__(self, centroids: _Optional[_Iterable[float]] = ..., offsets: _Optional[_Iterable[int]] = ..., lengths: _Optional[_Iterable[int]] = ..., centroids_tensor: _Optional[_Union[Tensor, _Mapping]] = ..., loss: _Optional[float] = ...) -> None: ...

class HnswParameters(_message.Message):
    __slots__ = ("max_connections", "construction_ef", "max_level")
    MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_EF_FIELD_NUMBER: _ClassVar[int]
    MAX_LEVEL_FIELD_NUMBER: _ClassVar[int]
    max_connections: int
    construction_ef: int
    max_level: int
    def __init__(self, max_connections: _Optional[int] = ..., construction_ef: _Optional[int] = ..., max_level: _Optional[int] = ...) -> None: ...

class VectorIndexDetails(_message.Message):
    __slots__ = ("metric_type", "target_partition_size", "hnsw_index_config", "pq", "sq", "rq", "flat", "runtime_hints", "target_num_partitions")
    class ProductQuantization(_message.Message):
        __slots__ = ("num_bits", "num_sub_vectors")
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        NUM_SUB_VECTORS_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        num_sub_vectors: int
        def __init__(self, num_bits: _Optional[int] = ..., num_sub_vectors: _Optional[int] = ...) -> None: ...
    class ScalarQuantization(_message.Message):
        __slots__ = ("num_bits",)
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        def __init__(self, num_bits: _Optional[int] = ...) -> None: ...
    class RabitQuantization(_message.Message):
        __slots__ = ("num_bits", "rotation_type")
        class RotationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            FAST: _ClassVar[VectorIndexDetails.RabitQuantization.RotationType]
            MATRIX: _ClassVar[VectorIndexDetails.RabitQuantization.RotationType]
        FAST: VectorIndexDetails.RabitQuantization.RotationType
        MATRIX: VectorIndexDetails.RabitQuantization.RotationType
        NUM_BITS_FIELD_NUMBER: _ClassVar[int]
        ROTATION_TYPE_FIELD_NUMBER: _ClassVar[int]
        num_bits: int
        rotation_type: VectorIndexDetails.RabitQuantization.RotationType
        def __init__(self, num_bits: _Optional[int] = ..., rotation_type: _Optional[_Union[VectorIndexDetails.RabitQuantization.RotationType, str]] = ...) -> None: ...
    class FlatCompression(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class RuntimeHintsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_PARTITION_SIZE_FIELD_NUMBER: _ClassVar[int]
    HNSW_INDEX_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PQ_FIELD_NUMBER: _ClassVar[int]
    SQ_FIELD_NUMBER: _ClassVar[int]
    RQ_FIELD_NUMBER: _ClassVar[int]
    FLAT_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_HINTS_FIELD_NUMBER: _ClassVar[int]
    TARGET_NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    metric_type: VectorMetricType
    target_partition_size: int
    hnsw_index_config: HnswParameters
    pq: VectorIndexDetails.ProductQuantization
    sq: VectorIndexDetails.ScalarQuantization
    rq: VectorIndexDetails.RabitQuantization
    flat: VectorIndexDetails.FlatCompression
    runtime_hints: _containers.ScalarMap[str, str]
    target_num_partitions: int
    def __init__(self, metric_type: _Optional[_Union[VectorMetricType, str]] = ..., target_partition_size: _Optional[int] = ..., hnsw_index_config: _Optional[_Union[HnswParameters, _Mapping]] = ..., pq: _Optional[_Union[VectorIndexDetails.ProductQuantization, _Mapping]] = ..., sq: _Optional[_Union[VectorIndexDetails.ScalarQuantization, _Mapping]] = ..., rq: _Optional[_Union[VectorIndexDetails.RabitQuantization, _Mapping]] = ..., flat: _Optional[_Union[VectorIndexDetails.FlatCompression, _Mapping]] = ..., runtime_hints: _Optional[_Mapping[str, str]] = ..., target_num_partitions: _Optional[int] = ...) -> None: ...
