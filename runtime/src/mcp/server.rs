//! The rmcp [`ServerHandler`] of a toolgate server: tools from the registry, everything else from the
//! user's own handler.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, Tool as McpTool,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::convert::CallAnswer;
use super::handler::McpHandler;
use super::listing::definitions;
use super::session::Opening;
use super::{logging, tasks, view};

impl<H: ServerHandler + Clone> ServerHandler for McpHandler<H> {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if context.peer.peer_info().is_none() {
            context.peer.set_peer_info(request.clone());
        }
        // A session being opened over HTTP: its requests may be answered directly, by this handler.
        if let Some(opening) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Opening<Self>>())
        {
            opening.open(self.clone(), context.peer.clone());
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.clients.add_peer(context.peer.clone());
        self.extras.on_initialized(context).await;
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page = self.page(request, &self.caller(&context))?;
        let definitions = definitions(&page.snapshot);
        let tools = page
            .tools
            .iter()
            .map(|&i| definitions[i.index()].clone())
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = page.next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        let snapshot = self.shared.registry.snapshot();
        let index = *snapshot.by_name.get(name)?;
        Some(definitions(&snapshot)[index.index()].clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.answer_call(request, context, None, None)
            .await
            .map(CallAnswer::into_response)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller(&context);
        let task = self
            .shared
            .registry
            .task(&caller, &request.task_id)
            .await
            .map_err(tasks::error)?;
        let structured = self
            .shared
            .registry
            .get(&task.tool)
            .is_some_and(|tool| tool.output_schema.is_some());
        tasks::detailed(task, structured)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context);
        let answers = request.input_responses.into_iter().collect();
        self.shared
            .registry
            .answer_task(&caller, &request.task_id, answers)
            .await
            .map_err(tasks::error)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context);
        self.shared
            .registry
            .cancel_task(&caller, &request.task_id)
            .await
            .map_err(tasks::error)
    }

    #[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still part of the versions served
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = logging::rank(request.level);
        self.session.log_level.store(level, Ordering::Relaxed);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.extras.complete(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.extras.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.extras.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.serves_view() {
            return self.extras.list_resources(request, context).await;
        }
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let mut listed = match self.extras.list_resources(request, context).await {
            // Handlers that offer no resources of their own say so; the App is the only one.
            Err(e) if e.code == ErrorCode::METHOD_NOT_FOUND => ListResourcesResult::default(),
            other => other?,
        };
        if first_page {
            listed.resources.insert(0, view::resource());
        }
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.extras.list_resource_templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri == view::VIEW_URI && self.serves_view() {
            return Ok(view::contents().into());
        }
        self.extras.read_resource(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = self
            .extras
            .accepted_subscription_filter(requested)
            .unwrap_or_default();
        if requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed == Some(true) {
            self.shared.clients.add_listener(context.sink().clone());
        }
        self.extras.listen(context).await
    }

    #[allow(deprecated)] // resources/subscribe: legacy-only in rmcp, still part of the versions served
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extras.subscribe(request, context).await
    }

    #[allow(deprecated)] // resources/unsubscribe: as above
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extras.unsubscribe(request, context).await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.extras.supported_protocol_versions()
    }
}
