"""AMD's machine-readable ISA (amdgpu_isa_cdna3.xml, amdgpu_isa_cdna4.xml, ...): one entry per instruction.

Schema (GPUOpen-Tools/isa_spec_manager, documentation/spec_documentation.md, schema 1.1.1):
Spec > Document (Copyright, License, ReleaseDate, SchemaVersion) and Spec > ISA > Architecture >
ArchitectureName ("AMD CDNA 4"); ISA > Instructions > Instruction > InstructionFlags,
InstructionName, AliasedInstructionNames, Description, InstructionEncodings > InstructionEncoding >
EncodingName, EncodingCondition, Opcode, Operands > Operand (attributes Input, Output,
IsImplicit, Order; FieldName, DataFormatName, OperandType, OperandSize), FunctionalGroup > Name,
FunctionalSubgroups > Subgroup. The ISA's Encodings, DataFormats and OperandTypes (most of the
file's 9 MB) describe bit layouts, not instructions, and are dropped as soon as they are read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from kernel_mcp.docs.readers import Section, unique_id, first_sentence, guess_arch
from kernel_mcp.errors import InvalidInput

MAX_ENCODINGS_SHOWN = 8
_DROPPED = {"Encoding", "DataFormat", "OperandType", "FunctionalGroups"}  # bit layouts: not read


def _text(elem: ET.Element | None) -> str:
    # descriptions may hold markup (<p>, <br/>): all of their text, whitespace folded
    return " ".join(" ".join(elem.itertext()).split()) if elem is not None else ""


def _operand(op: ET.Element) -> str:
    direction = {(True, True): "in/out", (True, False): "in", (False, True): "out"}.get(
        (op.get("Input", "").lower() == "true", op.get("Output", "").lower() == "true"), ""
    )
    kind = (op.findtext("OperandType") or "?").removeprefix("OPR_")
    fmt = (op.findtext("DataFormatName") or "").removeprefix("FMT_")
    size = op.findtext("OperandSize") or "?"
    implicit = " implicit" if op.get("IsImplicit", "").lower() == "true" else ""
    return f"{op.findtext('FieldName') or kind} {direction} {kind} {fmt} {size}b{implicit}".replace("  ", " ")


def instruction_body(elem: ET.Element, arch_name: str) -> tuple[str, str, str]:
    """(name, description, the entry's text) of one <Instruction>."""
    name = (elem.findtext("InstructionName") or "").strip()
    description = _text(elem.find("Description"))
    lines = [f"{name} ({arch_name})" if arch_name else name, description or "(no description in the XML)"]
    group = elem.find("FunctionalGroup")
    if group is not None:
        subgroups = [s.text.strip() for s in group.iter("Subgroup") if s.text and s.text.strip() != "NOT_ASSIGNED"]
        lines.append(f"functional group: {group.findtext('Name') or '?'}" + (f" ({', '.join(subgroups)})" if subgroups else ""))
    aliases = [a.text.strip() for a in elem.iter("InstructionName") if a.text and a.text.strip() != name]
    if aliases:
        lines.append("also spelled: " + ", ".join(aliases[:8]))
    encodings = list(elem.iter("InstructionEncoding"))
    if encodings:
        lines.append("encodings:")
    for enc in encodings[:MAX_ENCODINGS_SHOWN]:
        condition = enc.findtext("EncodingCondition") or ""
        operands = sorted(enc.iter("Operand"), key=lambda o: int(o.get("Order", "0")) if o.get("Order", "0").isdigit() else 0)
        lines.append(
            f"- {enc.findtext('EncodingName') or '?'} opcode {enc.findtext('Opcode') or '?'}"
            + (f" [{condition}]" if condition and condition != "default" else "")
            + ": "
            + "; ".join(_operand(o) for o in operands)
        )
    if len(encodings) > MAX_ENCODINGS_SHOWN:
        lines.append(f"- ... {len(encodings) - MAX_ENCODINGS_SHOWN} more encodings")
    return name, description, "\n".join(lines)


def read_isa_xml(path: Path, page_id: str) -> list[Section]:
    """Streamed: each <Instruction> is turned into an entry and freed, as are the bit layouts."""
    arch_name = ""
    entries: list[Section] = []
    taken: set[str] = set()
    inside = 0  # depth of <Instruction> elements open: an OperandType there is an operand's, not a layout
    try:
        for event, elem in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                inside += elem.tag == "Instruction"
                continue
            if elem.tag == "ArchitectureName":
                arch_name = (elem.text or "").strip()
            elif elem.tag == "Instruction":
                name, description, body = instruction_body(elem, arch_name)
                if name:
                    sid = unique_id(f"{page_id}/{name.lower()}", taken)
                    entries.append(
                        Section(
                            id=sid,
                            title=name,
                            layer=2,
                            body=body,
                            parent=page_id,
                            summary=first_sentence(description) or name,
                            citation=f"{path.name} (AMD machine-readable ISA), instruction {name}",
                            mnemonic=name.lower(),
                        )
                    )
                elem.clear()
                inside -= 1
            elif elem.tag in _DROPPED and not inside:
                elem.clear()
    except ET.ParseError as exc:
        raise InvalidInput(f"{path.name} is not well-formed XML: {exc}") from None
    if not entries:
        raise InvalidInput(f"{path.name}: no <Instruction> entries (not an AMD machine-readable ISA file?)")
    arch = guess_arch(arch_name + " " + path.name) or [arch_name.lower() or path.stem.lower()]
    for entry in entries:
        entry.arch = arch
    page = Section(
        id=page_id,
        title=f"{arch_name or path.stem} instructions",
        layer=1,
        body=f"{len(entries)} instructions of {arch_name or 'this ISA'} ({', '.join(arch)}) from {path.name}: the complete instruction list of AMD's machine-readable ISA.",
        parent="map",
        arch=arch,
        summary=f"machine-readable ISA of {arch_name or path.stem}",
        citation=f"{path.name} (AMD machine-readable ISA)",
    )
    return [page] + entries
