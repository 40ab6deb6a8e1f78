"""Customer-service desk: find the right order, read the policy, refund or deny correctly."""

from __future__ import annotations

from typing import Any, Literal

from spade.envs import ToolEnv, tool

FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Goran", "Hana", "Ivo", "Jia"]
LAST = ["Okafor", "Silva", "Novak", "Tanaka", "Moreau", "Khan", "Berg", "Rossi"]
ITEMS = ["desk lamp", "rain jacket", "blender", "yoga mat", "backpack", "kettle",
         "headphones", "board game", "coffee grinder", "phone case"]  # fmt: skip
POLICY = (
    "Refund policy: an order can only be refunded after it has been delivered. Delivered "
    "orders are refunded in full within 30 days of delivery, except final-sale items, "
    "which are never refunded. Otherwise deny the request with the reason code that applies: "
    "not_delivered, outside_window or final_sale."
)
Reason = Literal["not_delivered", "outside_window", "final_sale"]
CASES = ["eligible", "not_delivered", "outside_window", "final_sale"]


class RefundDeskEnv(ToolEnv):
    """The reward checks the recorded refund or denial, so a plausible reply is not enough."""

    max_turns = 10

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        names = [f"{first} {self.rng.choice(LAST)}" for first in self.rng.sample(FIRST, 3)]
        ids = self.rng.sample(range(10000, 100000), 9)
        self.orders: dict[str, dict[str, Any]] = {}
        for name in names:
            for item in self.rng.sample(ITEMS, self.rng.randint(2, 3)):
                self.orders[f"A{ids.pop()}"] = self._order(name, item, self.rng.choice(CASES))
        self.customer = self.rng.choice(names)
        self.target_id = self.rng.choice(
            [i for i, o in self.orders.items() if o["customer"] == self.customer]
        )
        self.resolutions: list[tuple[str, str, Any]] = []
        item = self.orders[self.target_id]["item"]
        return (
            f"Customer {self.customer} asks for a refund for the {item} they ordered. Handle "
            "the request according to our refund policy, then answer with a one-line summary "
            "for the customer.",
            {},
        )

    def _order(self, customer: str, item: str, case: str) -> dict[str, Any]:
        days = self.rng.randint(31, 90) if case == "outside_window" else self.rng.randint(1, 30)
        return {
            "customer": customer,
            "item": item,
            "price": self.rng.randint(1500, 40000) / 100,
            "status": "in transit" if case == "not_delivered" else "delivered",
            "days_since_delivery": None if case == "not_delivered" else days,
            "final_sale": case == "final_sale",
        }

    @tool
    def find_orders(self, customer: str) -> list[dict[str, str]]:
        """List the orders (order id and item) of a customer given by full name."""
        wanted = customer.strip().lower()
        found = [{"order_id": i, "item": o["item"]} for i, o in self.orders.items()
                 if o["customer"].lower() == wanted]  # fmt: skip
        if not found:
            raise LookupError(f"no customer named {customer!r}")
        return found

    @tool
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Show an order's status, price, days since delivery and final-sale flag."""
        if order_id not in self.orders:
            raise LookupError(f"no order {order_id!r}")
        return {"order_id": order_id, **self.orders[order_id]}

    @tool
    def get_policy(self) -> str:
        """Read the refund policy."""
        return POLICY

    @tool
    def issue_refund(self, order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order_id: The order to refund.
            amount: Amount in dollars.
        """
        price = self.get_order(order_id)["price"]
        if not 0 < amount <= price:
            raise ValueError(f"amount must be more than 0 and at most {price}")
        self.resolutions.append(("refund", order_id, round(amount, 2)))
        return f"Refunded ${amount:.2f} for order {order_id}."

    @tool
    def deny_refund(self, order_id: str, reason: Reason) -> str:
        """Deny a refund request with a policy reason code."""
        self.get_order(order_id)
        self.resolutions.append(("deny", order_id, reason))
        return f"Refund for order {order_id} denied ({reason})."

    def _expected(self) -> tuple[str, str, Any]:
        order, target = self.orders[self.target_id], self.target_id
        if order["status"] != "delivered":
            return ("deny", target, "not_delivered")
        if order["final_sale"] or order["days_since_delivery"] > 30:
            return ("deny", target, "final_sale" if order["final_sale"] else "outside_window")
        return ("refund", target, order["price"])

    def check(self) -> float:
        return float(self.resolutions == [self._expected()] and bool(self.submitted_answer))

    def solution(self) -> list[Any]:
        action, order_id, detail = self._expected()
        final = {"name": "issue_refund", "arguments": {"order_id": order_id, "amount": detail}}
        if action == "deny":
            final = {"name": "deny_refund", "arguments": {"order_id": order_id, "reason": detail}}
        return [
            {"name": "find_orders", "arguments": {"customer": self.customer}},
            {"name": "get_order", "arguments": {"order_id": order_id}},
            {"name": "get_policy", "arguments": {}},
            final,
            f"Your request for order {order_id} has been handled.",
        ]
