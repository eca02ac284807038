"""The BlueField-3 BMC of the twin: a Redfish service generated from the twin card's state."""
