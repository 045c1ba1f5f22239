"""Writes files in the schema of AMD's machine-readable ISA (amdgpu_isa_cdna3.xml, amdgpu_isa_cdna4.xml).

The element layout follows GPUOpen-Tools/isa_spec_manager (documentation/spec_documentation.md,
schema 1.1.1) and the element order of the released files (tests/data/SOURCES.md): Document,
then ISA > Architecture, Encodings (bit layouts with condition expression trees), Instructions,
DataFormats, OperandTypes, FunctionalGroups. Descriptions here are our own words. With
`filler` instructions the file reaches the size of a real one (about 9 MB for 1,200 instructions),
which benchmarks/isa_xml_ingest.py times.
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.sax.saxutils import escape

# (name, description, encoding, functional group, [(field, data format, operand type, size, direction)])
Instruction = tuple[str, str, str, str, list[tuple[str, str, str, int, str]]]

MFMA_OPERANDS = [
    ("VDST", "FMT_NUM_F32", "OPR_SREG_VGPR_AGPR", 128, "out"),
    ("SRC0", "FMT_NUM_BF16", "OPR_VGPR", 128, "in"),
    ("SRC1", "FMT_NUM_BF16", "OPR_VGPR", 128, "in"),
    ("SRC2", "FMT_NUM_F32", "OPR_SREG_VGPR_AGPR", 128, "in"),
]
COMMON: list[Instruction] = [
    (
        "S_WAITCNT",
        "Wait until the counts of outstanding memory operations of the wave are at or below the given values.",
        "ENC_SOPP",
        "SALU",
        [("SIMM16", "FMT_NUM_B16", "OPR_WAITCNT", 16, "in")],
    ),
    (
        "DS_READ_B128",
        "Read 128 bits per lane from the local data share into four vector registers.",
        "ENC_DS",
        "VMEM",
        [("VDST", "FMT_NUM_B128", "OPR_VGPR", 128, "out"), ("ADDR", "FMT_NUM_B32", "OPR_VGPR", 32, "in")],
    ),
    (
        "V_PK_FMA_F32",
        "Packed fused multiply-add of two pairs of single-precision values.",
        "ENC_VOP3P",
        "VALU",
        [("VDST", "FMT_NUM_PK2_F32", "OPR_VGPR", 64, "out"), ("SRC0", "FMT_NUM_PK2_F32", "OPR_SRC_VGPR", 64, "in")],
    ),
    ("V_MFMA_F32_16X16X16_BF16", "Matrix fused multiply-add of 16x16x16 bf16 inputs accumulated in single precision.", "ENC_VOP3P", "VALU", MFMA_OPERANDS),
]
CDNA4_ONLY: list[Instruction] = [
    ("V_MFMA_F32_16X16X32_BF16", "Matrix fused multiply-add of 16x16x32 bf16 inputs accumulated in single precision.", "ENC_VOP3P", "VALU", MFMA_OPERANDS),
    (
        "DS_READ_B64_TR_B16",
        "Read 64 bits per lane from the local data share with 16-bit elements transposed across lanes.",
        "ENC_DS",
        "VMEM",
        [("VDST", "FMT_NUM_B64", "OPR_VGPR", 64, "out"), ("ADDR", "FMT_NUM_B32", "OPR_VGPR", 32, "in")],
    ),
]
CDNA3_ONLY: list[Instruction] = [
    ("V_MFMA_F32_16X16X8_XF32", "Matrix fused multiply-add of 16x16x8 reduced-precision single-precision inputs.", "ENC_VOP3P", "VALU", MFMA_OPERANDS),
]


_TAG = re.compile(r"(<[^>]+>)")


def _pretty(fragment: str, depth: int) -> str:
    """One element per line, four spaces per level, as the released files are laid out (about
    half of their bytes are this indentation)."""
    out, text = [], ""
    for piece in _TAG.split(fragment):
        if not piece.startswith("<"):
            text += piece
            continue
        if piece.startswith("</"):
            if text:  # <Name>text</Name> stays on one line
                out[-1] += text + piece
                text = ""
                depth -= 1
                continue
            depth -= 1
            out.append("    " * depth + piece)
        else:
            out.append("    " * depth + piece)
            if not piece.endswith("/>"):
                depth += 1
    return "\n".join(out) + "\n"


def _expression(depth: int) -> str:
    # a condition tree shaped like the released files' (Operator / Subexpressions / Id / Literal)
    if depth == 0:
        return '<Expression Type="Literal"><Value>255</Value><ValueType Name="Base"><BaseType>I</BaseType><Size>32</Size></ValueType></Expression>'
    return (
        f'<Expression Type="Operator"><Operator>!=</Operator><Subexpressions>{_expression(depth - 1)}'
        f'<Expression Type="Id"><Label>SSRC0</Label></Expression></Subexpressions></Expression>'
    )


def _encoding(name: str, order: int) -> str:
    fields = "".join(
        f'<Field IsConditional="false"><FieldName>{f}</FieldName><Description>Field {f}.</Description>'
        f'<BitLayout RangeCount="1"><Range Order="0"><BitCount>8</BitCount><BitOffset>{8 * i}</BitOffset></Range></BitLayout></Field>'
        for i, f in enumerate(("ENCODING", "OP", "SDST", "SSRC0"))
    )
    identifiers = "".join(f'<EncodingIdentifier Radix="2">{i:032b}</EncodingIdentifier>' for i in range(32))
    return (
        f'<Encoding Order="{order}"><EncodingName>{name}</EncodingName><BitCount>32</BitCount>'
        f'<EncodingIdentifierMask Radix="2">{"1" * 9}{"0" * 23}</EncodingIdentifierMask><EncodingIdentifiers>{identifiers}</EncodingIdentifiers>'
        f"<EncodingConditions><EncodingCondition><ConditionName>default</ConditionName><CondtionExpression>{_expression(4)}"
        f"</CondtionExpression></EncodingCondition></EncodingConditions><Description>Instructions encoded as {name}.</Description>"
        f"<MicrocodeFormat><BitMap>{fields}</BitMap></MicrocodeFormat></Encoding>"
    )


def _instruction(inst: Instruction, opcode: int, variants: int) -> str:
    name, description, encoding, group, operands = inst
    ops = "".join(
        f'<Operand Input="{str(d in ("in", "in/out")).lower()}" Output="{str(d in ("out", "in/out")).lower()}" IsImplicit="false" '
        f'IsBinaryMicrocodeRequired="true" Order="{k + 1}"><FieldName>{f}</FieldName><DataFormatName>{fmt}</DataFormatName>'
        f"<OperandType>{kind}</OperandType><OperandSize>{size}</OperandSize></Operand>"
        for k, (f, fmt, kind, size, d) in enumerate(operands)
    )
    encodings = "".join(
        f"<InstructionEncoding><EncodingName>{encoding if v == 0 else f'{encoding}_VARIANT{v}'}</EncodingName>"
        f'<EncodingCondition>{"default" if v == 0 else "has_lit"}</EncodingCondition><Opcode Radix="10">{opcode}</Opcode>'
        f"<Operands>{ops}</Operands></InstructionEncoding>"
        for v in range(variants)
    )
    flags = "".join(f"<{f}>FALSE</{f}>" for f in ("IsBranch", "IsConditionalBranch", "IsIndirectBranch", "IsProgramTerminator", "IsImmediatelyExecuted"))
    return (
        f"<Instruction><InstructionFlags>{flags}</InstructionFlags><InstructionName>{escape(name)}</InstructionName>"
        f"<Description>{escape(description)}</Description><InstructionEncodings>{encodings}</InstructionEncodings>"
        f"<FunctionalGroup><Name>{group}</Name><FunctionalSubgroups><Subgroup>NOT_ASSIGNED</Subgroup></FunctionalSubgroups></FunctionalGroup></Instruction>"
    )


def build(path: Path, arch_name: str, instructions: list[Instruction], filler: int = 0, variants: int = 2) -> Path:
    """The ISA file at `path`: `instructions`, then `filler` generated ones (V_FILLER_OP_<n>), each
    with `variants` encodings (the released files give most VALU instructions four or five)."""
    generated = [
        (
            f"V_FILLER_OP_{n:04d}",
            f"Generated instruction {n} that exercises the reader at full size.",
            "ENC_VOP3",
            "VALU",
            [("VDST", "FMT_NUM_F32", "OPR_VGPR", 32, "out"), ("SRC0", "FMT_NUM_F32", "OPR_SRC", 32, "in"), ("SRC1", "FMT_NUM_F32", "OPR_SRC", 32, "in")],
        )
        for n in range(filler)
    ]
    with path.open("w", encoding="utf-8") as out:
        out.write(
            "<Spec>\n<Document><Copyright>Generated for kernel-mcp tests</Copyright><Sensitivity>Public.</Sensitivity>"
            "<License>MIT</License><ReleaseDate>2025-07-24</ReleaseDate><SchemaVersion>1.1.1</SchemaVersion></Document>\n"
        )
        out.write(f"<ISA><Architecture><ArchitectureName>{escape(arch_name)}</ArchitectureName><ArchitectureId>3</ArchitectureId></Architecture>\n<Encodings>")
        for order, name in enumerate(("ENC_SOP1", "ENC_SOPP", "ENC_VOP3", "ENC_VOP3P", "ENC_DS", "ENC_FLAT")):
            out.write(_pretty(_encoding(name, order), 3))
        out.write("</Encodings>\n<Instructions>\n")
        for opcode, inst in enumerate(instructions + generated):
            out.write(_pretty(_instruction(inst, opcode, variants), 3))
        out.write(
            "</Instructions>\n<DataFormats><DataFormat><DataFormatName>FMT_NUM_F32</DataFormatName><DataType>float</DataType>"
            "<BitCount>32</BitCount></DataFormat></DataFormats>\n<OperandTypes><OperandType><OperandTypeName>OPR_VGPR</OperandTypeName>"
            "<IsPartitioned>false</IsPartitioned></OperandType></OperandTypes>\n<FunctionalGroups><FunctionalGroup><Name>VALU</Name>"
            "<Description>Vector ALU.</Description></FunctionalGroup></FunctionalGroups>\n</ISA>\n</Spec>\n"
        )
    return path
