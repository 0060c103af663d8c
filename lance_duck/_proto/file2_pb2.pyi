from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeferredEncoding(_message.Message):
    __slots__ = ("buffer_location", "buffer_length")
    BUFFER_LOCATION_FIELD_NUMBER: _ClassVar[int]
    BUFFER_LENGTH_FIELD_NUMBER: _ClassVar[int]
    buffer_location: int
    buffer_length: int
    def __init__(self, buffer_location: _Optional[int] = ..., buffer_length: _Optional[int] = ...) -> None: ...

class DirectEncoding(_message.Message):
    __slots__ = ("encoding",)
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    encoding: bytes
    def __init__(self, encoding: _Optional[bytes] = ...) -> None: ...

class Encoding(_message.Message):
    __slots__ = ("indirect", "direct", "none")
    INDIRECT_FIELD_NUMBER: _ClassVar[int]
    DIRECT_FIELD_NUMBER: _ClassVar[int]
    NONE_FIELD_NUMBER: _ClassVar[int]
    indirect: DeferredEncoding
    direct: DirectEncoding
    none: _empty_pb2.Empty
    def __init__(self, indirect: _Optional[_Union[DeferredEncoding, _Mapping]] = ..., direct: _Optional[_Union[DirectEncoding, _Mapping]] = ..., none: _Optional[_Union[_empty_pb2.Empty, _Mapping]] = ...) -> None: ...

class ColumnMetadata(_message.Message):
    __slots__ = ("encoding", "pages", "buffer_offsets", "buffer_sizes")
    class Page(_message.Message):
        __slots__ = ("buffer_offsets", "buffer_sizes", "length", "encoding", "priority")
        BUFFER_OFFSETS_FIELD_NUMBER: _ClassVar[int]
        BUFFER_SIZES_FIELD_NUMBER: _ClassVar[int]
        LENGTH_FIELD_NUMBER: _ClassVar[int]
        ENCODING_FIELD_NUMBER: _ClassVar[int]
        PRIORITY_FIELD_NUMBER: _ClassVar[int]
        buffer_offsets: _containers.RepeatedScalarFieldContainer[int]
        buffer_sizes: _containers.RepeatedScalarFieldContainer[int]
        length: int
        encoding: Encoding
        priority: int
        def __init__(self, buffer_offsets: _Optional[_Iterable[int]] = ..., buffer_sizes: _Optional[_Iterable[int]] = ..., length: _Optional[int] = ..., encoding: _Optional[_Union[Encoding, _Mapping]] = ..., priority: _Optional[int] = ...) -> None: ...
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    BUFFER_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    BUFFER_SIZES_FIELD_NUMBER: _ClassVar[int]
    encoding: Encoding
    pages: _containers.RepeatedCompositeFieldContainer[ColumnMetadata.Page]
    buffer_offsets: _containers.RepeatedScalarFieldContainer[int]
    buffer_sizes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, encoding: _Optional[_Union[Encoding, _Mapping]] = ..., pages: _Optional[_Iterable[_Union[ColumnMetadata.Page, _Mapping]]] = ..., buffer_offsets: _Optional[_Iterable[int]] = ..., buffer_sizes: _Optional[_Iterable[int]] = ...) -> None: ...
