"""The platform-neutral OSBP v0.1.0 core: models, mandate validation, the approval gate, money and time.

This package's names are the plug-in contract: an integrator implements :class:`PlatformAdapter` (every
method returns its value or a :class:`Problem`), and :class:`OsbpCore` adds every OSBP rule around it (the
read tools' input checks and availability paging, mandate validation, the approval gate, idempotency).
docs/adapter.md walks through writing one; the submodules hold the rest of the core.
"""

from osbp.protocol.core import OsbpCore
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatus,
    BookingStatusInput,
    Customer,
    Money,
    OperatingHours,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    PolicyOrganization,
    Problem,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.port import OUTCOME_UNKNOWN, BookingRequest, Offer, PlatformAdapter
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem

__all__ = [
    "OUTCOME_UNKNOWN",
    "AvailabilityFindInput",
    "Booking",
    "BookingCreateInput",
    "BookingRequest",
    "BookingStatus",
    "BookingStatusInput",
    "Customer",
    "ExtensionCode",
    "Money",
    "Offer",
    "OperatingHours",
    "OsbpCore",
    "PlatformAdapter",
    "PlatformIdentity",
    "Policy",
    "PolicyExplainInput",
    "PolicyOrganization",
    "Problem",
    "ProblemCode",
    "Service",
    "ServiceDescribeInput",
    "Slot",
    "VerificationChallenge",
    "VerificationSendInput",
    "VerificationVerifyInput",
    "problem",
]
